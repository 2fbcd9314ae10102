//! Docker-free benchmarks of the suite's own hot paths: recording one history event, a critical
//! section's read and write of the protected register on keys spread over 100 000, merging two
//! latency histograms, computing a cell's statistics from a synthetic million-event history, and
//! the whole checker (`check::evaluate`) on 25k, 50k and 100k grants of one key.
//!
//! The checker at scale is measured apart, once, so `/usr/bin/time -v` can give its peak memory
//! alone (criterion's repetitions would take minutes and mix every benchmark's memory):
//!
//! ```text
//! suite --write-history DIR 10000000   # a cell folder: cell.json and a 10 M-event history
//! suite --check DIR                    # check::evaluate(DIR) once, timed
//! suite --phases DIR                   # the same, phase by phase
//! suite --one-key 100000               # check::evaluate_history on 100k grants of one key
//! ```
//!
//! Measured on the 2-core development machine (release build, 2026-11-24), 9 999 996 events
//! (864 MB, 16 keys, 64 clients), `/usr/bin/time -v suite --check DIR`, while other engineers'
//! Docker clusters kept the load average at 5–6: 3.1–7.5 s with a peak RSS of 790 MB. The
//! events are held compactly (`history::Events`, 37 bytes an event: 374 MB); `--phases` shows
//! the rest: reading peaks at 570 MB (the two halves joined), the checkers' operations and
//! critical sections add 170 MB, the mutex holds and availability's windows the rest. Before the
//! compact store (every event a 280-byte `Event`), at the same load, run in turn with it:
//! 4.49 GB and 8.6–24 s (10.4–11.8 s at a load of 3.5). One key, 25k / 50k / 100k grants:
//! 0.11 / 0.22 / 0.45 s (0.67 / 2.67 / 9.85 s before the sweeps).
//!
//! The register's read and write (2026-12-04, a 2-core machine, noisy: the same
//! binary moves by 2× from one minute to the next, so the two builds ran alternately, five times
//! each, `suite --bench resource/`): 1.59, 2.09, 2.18, 2.31, 2.26 µs with the standard library's
//! SipHash map and a `Vec` per key; 1.77, 1.47, 2.03, 1.82, 1.65 µs with rustc-hash's map and a
//! key's first register held in place (median 2.18 → 1.77 µs). A lock cycle on one Redis master
//! cost lockbench 85–97 µs of CPU on that machine (`perf stat -p`, 8 clients, two 4 s windows);

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use lockbench::check::{self, History};
use lockbench::history::{self, Event, EventKind, Op, Recorder};
use lockbench::plan::{CellId, NO_CHAOS};
use lockbench::recipe::Strategy;
use lockbench::resource::{Register, ResourceMode};
use lockbench::stats::{self, CellInfo};
use lockbench::system::System;

/// A closed-loop history of `cycles` lock cycles by 16 clients on one key (4 events a cycle).
fn synthetic_history(cycles: u64) -> Vec<Event> {
    let mut events = Vec::with_capacity(cycles as usize * 4);
    let mut t = 0u64;
    for i in 0..cycles {
        let client = (i % 16) as u32;
        events.push(Event::new(
            t,
            client,
            EventKind::Invoke,
            Op::Acquire,
            "k00000",
        ));
        t += 40 + (i * 7919) % 300;
        let mut ok = Event::new(t, client, EventKind::Ok, Op::Acquire, "k00000");
        ok.token = Some(i + 1);
        ok.wakeups = Some(1);
        ok.requests = Some(3);
        events.push(ok);
        t += 1000 + (i * 104_729) % 4000;
        events.push(Event::new(
            t,
            client,
            EventKind::Invoke,
            Op::Release,
            "k00000",
        ));
        t += 50;
        events.push(Event::new(t, client, EventKind::Ok, Op::Release, "k00000"));
    }
    events
}

fn suite(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let path = std::env::temp_dir().join(format!("lockbench-bench-{}.jsonl", std::process::id()));
    let recorder = rt
        .block_on(async { Recorder::create(&path) })
        .expect("recorder");
    let handle = recorder.handle();
    c.bench_function("history/record_event", |b| {
        b.iter(|| {
            let mut e = Event::new(handle.now_us(), 3, EventKind::Ok, Op::Acquire, "k00000");
            e.token = Some(42);
            handle.record(e).expect("record");
        })
    });
    // A critical section's two register accesses (the read, then the write of what it read
    // plus one), on keys spread over 100 000 as the harness-overhead workload's are, each
    // recorded through the same recorder as a lock client's events.
    let keys: Vec<String> = (0..100_000).map(|i| format!("k{i:05}")).collect();
    let register = Register::new(ResourceMode::Fenced, Arc::new(recorder.handle()));
    let (mut n, mut token) = (0u64, 0u64);
    c.bench_function("resource/read_write_100k_keys", |b| {
        b.iter(|| {
            n = n
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // Tokens rise as a fencing counter's do, so the fenced register accepts each.
            token += 1;
            let key = &keys[((n >> 33) % 100_000) as usize];
            let v = register.read(3, key, token).expect("read");
            register.write(3, key, token, v + 1).expect("write");
        })
    });
    rt.block_on(recorder.finish()).expect("finish");
    let _ = std::fs::remove_file(&path);

    let mut a = stats::new_histogram();
    let mut bh = stats::new_histogram();
    for i in 0..100_000u64 {
        a.record(1 + (i * 7919) % 2_000_000).expect("record");
        bh.record(1 + (i * 104_729) % 2_000_000).expect("record");
    }
    c.bench_function("stats/histogram_merge_100k", |b| {
        b.iter(|| {
            let mut m = a.clone();
            m.add(&bh).expect("merge");
            m
        })
    });

    let events = history::Events::from(synthetic_history(250_000));
    let cell = synthetic_cell(16);
    let mut group = c.benchmark_group("stats");
    group.sample_size(10);
    group.bench_function("analyze_1m_events", |b| {
        b.iter(|| stats::analyze(&events, &cell))
    });
    group.finish();

    // Grants of one key, each with a waiter that gives up after the release: the shape that
    // made the availability checker quadratic (every gap against every wait).
    let mut group = c.benchmark_group("check");
    group.sample_size(10);
    for grants in [25_000u64, 50_000, 100_000] {
        let history = History::new(one_key(grants));
        let cell = synthetic_cell(17);
        group.bench_function(format!("evaluate_{}k_grants_one_key", grants / 1000), |b| {
            b.iter(|| check::evaluate_history(&history, cell.clone()))
        });
    }
    group.finish();
}

fn synthetic_cell(clients: u32) -> CellInfo {
    CellInfo {
        server_version: None,
        server_settings: None,
        id: CellId {
            version: None,
            system: System::Redis,
            strategy: Strategy::Predecessor,
            workload: "synthetic".into(),
            chaos: NO_CHAOS.into(),
            clients,
            repetition: None,
            library: None,
        },
        warmup: Duration::ZERO,
        end_us: None,
        resource: Default::default(),
        expect: Default::default(),
        settle_ms: None,
        lock: Default::default(),
    }
}

/// `grants` cycles on one key, 1 000 µs apart: client i % 16 is granted (1 ms lease) and
/// releases; client 16 waits meanwhile and times out after the release.
fn one_key(grants: u64) -> Vec<Event> {
    let mut events = Vec::with_capacity(grants as usize * 6);
    for i in 0..grants {
        let (t, c) = (i * 1000, (i % 16) as u32);
        let mut ok = Event::new(t + 10, c, EventKind::Ok, Op::Acquire, "k");
        (ok.token, ok.ttl_ms) = (Some(i + 1), Some(1));
        let mut gave_up = Event::new(t + 600, 16, EventKind::Fail, Op::Acquire, "k");
        gave_up.error = Some("timeout".into());
        events.extend([
            Event::new(t, c, EventKind::Invoke, Op::Acquire, "k"),
            ok,
            Event::new(t + 100, 16, EventKind::Invoke, Op::Acquire, "k"),
            Event::new(t + 500, c, EventKind::Invoke, Op::Release, "k"),
            gave_up,
            Event::new(t + 550, c, EventKind::Ok, Op::Release, "k"),
        ]);
    }
    events
}

/// Writes a cell folder with a history of about `n` events: 64 clients on 16 keys, each cycle
/// an acquire (invoke, ok with token and lease), the register's read and write, and a release
/// (invoke, ok), written line by line as the recorder does.
fn write_history(dir: &Path, n: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let cell = serde_json::to_string_pretty(&synthetic_cell(64)).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(check::CELL_FILE), cell)?;
    let file = std::fs::File::create(dir.join(check::HISTORY_FILE))?;
    let mut out = std::io::BufWriter::new(file);
    let cycles = n / 6;
    let mut token = [0u64; 16];
    let mut value = [0u64; 16];
    // Each key's lock passes from client to client every 1 000 µs; the 16 keys run side by side.
    for i in 0..cycles {
        let k = (i % 16) as usize;
        let round = i / 16;
        let client = (k as u64 * 4 + round % 4) as u32;
        let key = format!("k{k:02}");
        let t = round * 1000 + k as u64;
        token[k] += 1;
        let mut ok = Event::new(t + 10, client, EventKind::Ok, Op::Acquire, key.as_str());
        (ok.token, ok.ttl_ms, ok.requests) = (Some(token[k]), Some(2000), Some(2));
        let mut read = Event::new(t + 20, client, EventKind::Ok, Op::Read, key.as_str());
        (read.token, read.value) = (Some(token[k]), Some(value[k]));
        value[k] += 1;
        let mut write = Event::new(t + 400, client, EventKind::Ok, Op::Write, key.as_str());
        (write.token, write.value) = (Some(token[k]), Some(value[k]));
        for e in [
            Event::new(t, client, EventKind::Invoke, Op::Acquire, key.as_str()),
            ok,
            read,
            write,
            Event::new(
                t + 500,
                client,
                EventKind::Invoke,
                Op::Release,
                key.as_str(),
            ),
            Event::new(t + 550, client, EventKind::Ok, Op::Release, key.as_str()),
        ] {
            serde_json::to_writer(&mut out, &e).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()
}

/// `check::evaluate` on the cell folder `dir`, once, timed.
fn check_folder(dir: &Path) -> Result<(), String> {
    let start = Instant::now();
    let result = check::evaluate(dir).map_err(|e| e.to_string())?;
    let took = start.elapsed();
    let s = &result.analysis.summary;
    let safety = s.safety.as_ref().map_or("none", |s| s.verdict.name());
    println!(
        "check::evaluate {}: {:.2} s; {} acquisitions, safety {safety}, validity {}",
        dir.display(),
        took.as_secs_f64(),
        s.acquisitions,
        result.validity
    );
    Ok(())
}

/// The resident memory now and at its peak so far (Linux's `VmRSS` and `VmHWM`), to see which
/// phase holds what.
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().strip_suffix(" kB")?.parse::<u64>().ok())
            .map_or("?".to_string(), |kb| format!("{} MB", kb / 1000))
    };
    format!("RSS {}, peak {}", field("VmRSS:"), field("VmHWM:"))
}

/// What `check::evaluate` does, phase by phase, each timed (to see where the time goes).
fn phases(dir: &Path) -> Result<(), String> {
    let mut at = Instant::now();
    let mut lap = |what: &str| {
        println!("{what}: {:.2} s; {}", at.elapsed().as_secs_f64(), memory());
        at = Instant::now();
    };
    let text = std::fs::read_to_string(dir.join(check::CELL_FILE)).map_err(|e| e.to_string())?;
    let cell: CellInfo = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let (mut events, mut lines) =
        history::read_events(&dir.join(check::HISTORY_FILE)).map_err(|e| e.to_string())?;
    lap(&format!(
        "read {} events, {} MB in memory ({} bytes an event)",
        events.len(),
        events.bytes() / 1_000_000,
        events.bytes() / events.len().max(1)
    ));
    history::into_time_order(&mut events, &mut lines);
    lap("time order");
    let h = History::with_lines(events, lines);
    let _ = stats::analyze(&h.events, &cell);
    lap("stats::analyze");
    let mut verdicts = Vec::new();
    for c in check::checkers(cell.lock) {
        verdicts.push(c.check(&h, &cell));
        lap(c.name());
    }
    let _ = check::faults::fault_windows(&h, &cell, &verdicts);
    lap("fault windows");
    Ok(())
}

criterion_group!(benches, suite);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let done = match args.get(1).map(String::as_str) {
        Some("--write-history") => {
            let (Some(dir), Some(n)) = (args.get(2), args.get(3).and_then(|n| n.parse().ok()))
            else {
                eprintln!("usage: suite --write-history DIR EVENTS");
                std::process::exit(2);
            };
            Some(write_history(Path::new(dir), n).map_err(|e| e.to_string()))
        }
        Some("--phases") => {
            let Some(dir) = args.get(2) else {
                eprintln!("usage: suite --phases DIR");
                std::process::exit(2);
            };
            Some(phases(Path::new(dir)))
        }
        Some("--one-key") => {
            let Some(grants) = args.get(2).and_then(|n| n.parse().ok()) else {
                eprintln!("usage: suite --one-key GRANTS");
                std::process::exit(2);
            };
            let history = History::new(one_key(grants));
            let start = Instant::now();
            let r = check::evaluate_history(&history, synthetic_cell(17));
            println!(
                "check::evaluate_history, {grants} grants on one key: {:.3} s; validity {}",
                start.elapsed().as_secs_f64(),
                r.validity
            );
            Some(Ok(()))
        }
        Some("--check") => {
            let Some(dir) = args.get(2) else {
                eprintln!("usage: suite --check DIR");
                std::process::exit(2);
            };
            Some(check_folder(Path::new(dir)))
        }
        _ => None,
    };
    match done {
        Some(Ok(())) => {}
        Some(Err(e)) => {
            eprintln!("suite: {e}");
            std::process::exit(1);
        }
        None => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
