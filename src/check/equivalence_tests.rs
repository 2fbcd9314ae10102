//! The whole of `evaluate` (statistics, every checker, fault windows) on a generated history
//! that uses every field of an event, compared with what the 280-byte `Event` representation
//! gave on the same history (`testdata/evaluate-golden.json`, written by the commit before the
//! compact store). Any change of a verdict, count, evidence line or statistic shows here.
//!
//! `LOCKBENCH_BLESS=1 cargo test --lib equivalence` rewrites the golden file; do that only for
//! an intended change of results, and say so in the commit.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::testkit::cell;
use super::*;
use crate::history::{ErrorKind, EventKind, Op, Process, TIMEOUT_ERROR};
use crate::stats::write_hgrm;

const GOLDEN: &str = "src/check/testdata/evaluate-golden.json";

/// A deterministic pseudo-random sequence (an LCG: the test must not depend on a crate's RNG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// About 25 000 events: 8 clients on 3 keys whose cycles overlap in time (so there are double
/// grants, lost updates and stuck locks to find), every optional field set somewhere, unknown
/// and failed outcomes with texts and kinds (some without a kind, as old histories), lost
/// leases, stale accesses, token regressions, nemesis faults with targets (one that never
/// started), and acquisitions left open at the end.
fn generated() -> Vec<Event> {
    let mut r = Lcg(2026);
    let keys = ["k0", "key-one", "k2"];
    let (mut token, mut value) = ([0u64; 3], [0u64; 3]);
    let mut events = Vec::new();
    let mut t = 1_000u64;
    for i in 0..4_000u64 {
        t += r.next(400);
        let c = r.next(8) as u32;
        let k = r.next(3) as usize;
        let key = keys[k];
        let e = |t: u64, kind: EventKind, op: Op| Event::new(t, c, kind, op, key);
        let mut inv = e(t, EventKind::Invoke, Op::Acquire);
        if r.next(3) == 0 {
            inv.intended_us = Some(t.saturating_sub(r.next(80)));
        }
        if r.next(2) == 0 {
            inv.think_us = Some(r.next(500));
        }
        events.push(inv);
        let at = t + 5 + r.next(300);
        let mut out = match r.next(20) {
            0..=13 => {
                let mut ok = e(at, EventKind::Ok, Op::Acquire);
                token[k] += 1;
                // Now and then a token that does not increase.
                let tk = if r.next(40) == 0 {
                    token[k].saturating_sub(2)
                } else {
                    token[k]
                };
                ok.token = (r.next(30) != 0).then_some(tk);
                ok.ttl_ms = match r.next(6) {
                    0 => None,
                    1 => Some(0),
                    n => Some(n),
                };
                ok.wakeups = (r.next(4) != 0).then(|| r.next(3));
                ok.requests = Some(1 + r.next(4));
                ok.fallback_polls = (r.next(5) == 0).then(|| r.next(2));
                ok.queue_position = (r.next(200) != 0).then_some(token[k]);
                let hold = 100 + r.next(2_500);
                let mut rd = e(at + 10, EventKind::Ok, Op::Read);
                (rd.token, rd.value) = (ok.token, Some(value[k]));
                events.push(rd);
                let mut wr = e(at + hold / 2, EventKind::Ok, Op::Write);
                (wr.token, wr.value) = (ok.token, Some(value[k] + 1));
                if r.next(15) == 0 {
                    wr.kind = EventKind::Fail;
                    wr.error_kind = Some(ErrorKind::Stale);
                    wr.error = Some(format!("stale token {}", tk));
                } else if r.next(4) != 0 {
                    // Sometimes the next holder reads before this write: a lost update.
                    value[k] += 1;
                }
                events.push(wr);
                if r.next(12) == 0 {
                    events.push(e(at + hold / 3, EventKind::Info, Op::LeaseLost));
                }
                if r.next(50) != 0 {
                    let mut rel = e(at + hold, EventKind::Invoke, Op::Release);
                    rel.hold_us = Some(hold - r.next(20));
                    events.push(rel);
                    let mut done = e(at + hold + 30, EventKind::Ok, Op::Release);
                    if r.next(25) == 0 {
                        done.kind = EventKind::Fail;
                        done.error = Some("lease 7393a2045fdbe9f8 not found".into());
                        done.error_kind = Some(ErrorKind::Lost);
                    }
                    events.push(done);
                }
                ok
            }
            14..=16 => {
                let mut f = e(at + 5_000, EventKind::Fail, Op::Acquire);
                f.error = Some(TIMEOUT_ERROR.into());
                f.error_kind = (r.next(3) != 0).then_some(ErrorKind::Timeout);
                f.wakeups = Some(r.next(5));
                f
            }
            17 | 18 => {
                let mut f = e(at, EventKind::Info, Op::Acquire);
                f.error = Some(format!("connection reset by peer 10.0.0.{}", r.next(9)));
                f.error_kind = (r.next(4) != 0).then_some(ErrorKind::Connection);
                f.token = (r.next(3) == 0).then_some(token[k] + 1);
                f
            }
            _ => continue, // left open
        };
        if out.kind == EventKind::Ok && r.next(100) == 0 {
            out.process = Process::Client(8 + r.next(3) as u32);
        }
        events.push(out);
        if i % 400 == 200 {
            events.extend(fault(&mut r, t));
        }
    }
    // A worker's events reach the file late: sort by time, then move some back a little.
    events.sort_by_key(|e| e.t_us);
    for i in (1..events.len()).step_by(7) {
        if r.next(3) == 0 {
            events.swap(i - 1, i);
        }
    }
    events
}

/// A nemesis fault starting at `t` and its end: sometimes partial, sometimes failed to start
/// or to heal.
fn fault(r: &mut Lcg, t: u64) -> [Event; 2] {
    let targets: Vec<String> = (0..1 + r.next(3)).map(|n| format!("n{n}")).collect();
    let kind = ["kill", "pause", "partition"][r.next(3) as usize];
    let start = Event::fault(t, EventKind::Invoke, kind, targets.clone());
    let mut end = Event::fault(t + 20_000 + r.next(50_000), EventKind::Ok, kind, targets);
    if r.next(3) != 0 {
        (end.effect_us, end.undo_us) = (Some(t + r.next(900)), Some(end.t_us - r.next(900)));
        end.effect = (r.next(2) == 0).then(|| "partial: n2 refused".to_string());
    }
    match r.next(5) {
        0 => {
            end.kind = EventKind::Info;
            end.error = Some("start: docker kill n1 failed".into());
        }
        1 => {
            end.kind = EventKind::Info;
            end.error = Some("heal: iptables -D failed".into());
        }
        _ => {}
    }
    [start, end]
}

/// The cell folder of [`generated`], with a blank line now and then (so lines and event
/// indices differ) and a warm-up.
fn write_cell(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut info = cell(11);
    info.warmup = Duration::from_millis(30);
    info.end_us = Some(900_000);
    std::fs::write(dir.join(CELL_FILE), serde_json::to_string(&info).unwrap()).unwrap();
    let mut text = String::new();
    for (i, e) in generated().iter().enumerate() {
        text.push_str(&serde_json::to_string(e).unwrap());
        text.push('\n');
        if i % 997 == 3 {
            text.push('\n');
        }
    }
    std::fs::write(dir.join(HISTORY_FILE), text).unwrap();
}

/// Everything `evaluate` gives, as text: the summary and verdicts as written, every finding,
/// and the histograms' full percentile distributions.
fn everything(r: &CellResult) -> String {
    let mut out = serde_json::to_string_pretty(&serde_json::json!({
        "summary": r.analysis.summary,
        "verdicts": r.verdicts,
        "validity": r.validity,
    }))
    .unwrap();
    for v in &r.verdicts {
        // Every finding in a sum, every 50th in full (the file stays small).
        let sum: u64 = v.findings.iter().map(|f| f.t_us).sum();
        writeln!(
            out,
            "\n{} findings of {}, times summing to {sum}:",
            v.findings.len(),
            v.checker
        )
        .unwrap();
        for f in v.findings.iter().step_by(50) {
            writeln!(out, "{:?} {:?} {}", f.validity, f.class, f.t_us).unwrap();
        }
    }
    let a = &r.analysis;
    for (name, h) in [
        ("acquire", &a.acquire),
        ("handoff", &a.handoff),
        ("hold", &a.hold),
        ("release", &a.release),
    ] {
        let mut hgrm = Vec::new();
        write_hgrm(h, &mut hgrm).unwrap();
        writeln!(out, "\n{name}:\n{}", String::from_utf8(hgrm).unwrap()).unwrap();
    }
    out
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("lockbench-equiv-{}-{name}", std::process::id()))
}

#[test]
fn evaluate_gives_what_the_event_representation_gave() {
    let dir = tmp("cell");
    write_cell(&dir);
    let got = everything(&evaluate(&dir).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("LOCKBENCH_BLESS").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    // The history has something for every checker to find, or the comparison proves little.
    for needle in [
        "\"granted_twice\"",
        "\"lost_update\"",
        "\"token_regressions\"",
        "\"stale_accesses_rejected\"",
        "\"stuck_locks\"",
        "\"unknown\"",
        "\"faults\"",
        "\"started\": false",
    ] {
        assert!(want.contains(needle), "the golden file lacks {needle}");
    }
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "evaluate differs from {GOLDEN} from line {}: got {:?}, want {:?}",
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}
