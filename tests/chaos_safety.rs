//! Verdicts under faults on real clusters, through `lockbench run` as a user runs it, kept short
//! for CI (the long matrix is `benches/chaos-matrix.sh`):
//!
//! - ZooKeeper and etcd (4 nodes), herd and predecessor, a leader kill, the leader isolated,
//!   then the even 2 | 2 split: safe, no overlap, no lost update, and no acquisition succeeds
//!   during the even split.
//! - A client paused past its lease (SIGSTOP of its worker process) on every system: unfenced,
//!   overlaps and lost updates; fenced, stale accesses refused and no update lost.
//! - Redlock with a majority's clocks jumped past the TTL grants the lock twice, with the
//!   evidence.
//! - PostgreSQL with its clients cut off from the primary (`chaos/partition-clients.toml`): the
//!   holder is told its lock is lost, nobody else is granted it, and the lock is out of reach
//!   for the whole partition; with the holder stopped past its lease (`chaos/pause-clients.toml`)
//!   its session keeps the lock: both safe, liveness findings.
//!
//! The leader kill and the even split run alone: that test times elections and recoveries,
//! which two runs at once on a small machine would stretch. The pause and the clock jump
//! judge overlaps seconds past a lease, which a busy machine does not change, so they may run
//! beside each other (it saves CI the clock test's 20 s).

mod common;

use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use common::cli_run::{
    assert_evidence_walks_to_events, history, latest, n, run, safety, scratch, summary, write,
};
use serde_json::Value;

static TURN: RwLock<()> = RwLock::new(());

/// The machine to itself: no other test of this file runs meanwhile.
fn alone() -> RwLockWriteGuard<'static, ()> {
    TURN.write().unwrap_or_else(|p| p.into_inner())
}

/// Beside the other tests that time nothing, never beside [`alone`].
fn beside_others() -> RwLockReadGuard<'static, ()> {
    TURN.read().unwrap_or_else(|p| p.into_inner())
}

/// The fault windows of a history: (fault, targets, invoke t_us, end t_us).
fn windows(events: &[Value]) -> Vec<(String, String, u64, u64)> {
    let mut open: Vec<(String, String, u64)> = Vec::new();
    let mut done = Vec::new();
    for e in events.iter().filter(|e| e["op"] == "fault") {
        let fault = e["fault"].as_str().unwrap_or("?").to_string();
        let targets = e["targets"].to_string();
        let t = e["t_us"].as_u64().unwrap();
        if e["kind"] == "invoke" {
            open.push((fault, targets, t));
        } else if let Some(i) = open
            .iter()
            .position(|(f, tg, _)| *f == fault && *tg == targets)
        {
            let (f, tg, start) = open.remove(i);
            done.push((f, tg, start, t));
        }
    }
    done.sort_by_key(|w| w.2);
    done
}

/// Times of granted acquisitions.
fn grants(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e["op"] == "acquire" && e["kind"] == "ok")
        .map(|e| e["t_us"].as_u64().unwrap())
        .collect()
}

fn overlaps(s: &Value) -> u64 {
    [
        "granted_twice",
        "told_and_went_on",
        "expired_untold",
        "unknown",
    ]
    .iter()
    .map(|c| n(s, &["overlaps", c]))
    .sum()
}

#[test]
fn zookeeper_and_etcd_stay_safe_through_a_leader_kill_and_the_even_split() {
    let _turn = alone();
    let out = scratch("chaos-quorum");
    let workload = write(
        &out,
        "quorum.toml",
        "clients = 4\nkeys = 1\nhold = \"5ms\"\nthink = \"0ms\"\nduration = \"28s\"\n\
         warmup = \"1s\"\nlease_ttl = \"4s\"\nrenew = true\nacquire_timeout = \"20s\"\n\
         strategies = [\"herd\", \"predecessor\"]\nseed = 1\n",
    );
    // Four nodes: the leader killed at 2 s and back 3 s later; the leader alone on the minority
    // side (1 | 3) from 8 s to 11 s; then 2 | 2 from 12 s to 16 s, and 12 s to recover: a
    // 4-member etcd has taken over 5 s to elect a leader after such a heal (every member
    // campaigned alone meanwhile), ZooKeeper's first grant has come 6.6 s after it, and
    // acquisitions caught in the split only learn their outcome once a leader answers.
    let schedule = write(
        &out,
        "kill-then-split.toml",
        "seed = 7\nsystems = [\"zookeeper\", \"etcd\"]\ncluster_size = 4\nexpect = \"safe\"\n\
         [[faults]]\nkind = \"kill\"\ntarget = \"leader\"\ndata = \"keep\"\nrestart_after = \"3s\"\n\
         start = \"2s\"\n\
         [[faults]]\nkind = \"partition\"\nshape = \"isolate-leader\"\nstart = \"8s\"\nduration = \"3s\"\n\
         [[faults]]\nkind = \"partition\"\nshape = \"halves\"\nstart = \"12s\"\nduration = \"4s\"\n",
    );
    let res = run(
        &out,
        &[
            "--systems",
            "zookeeper,etcd",
            "--chaos",
            schedule.to_str().unwrap(),
        ],
        &[workload],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    let run = latest(&out);
    let mut table = Vec::new();
    for system in ["zookeeper", "etcd"] {
        for strategy in ["herd", "predecessor"] {
            let cell = format!("{system}-{strategy}-quorum-kill-then-split-c4");
            let s = safety(&run, &cell);
            assert_eq!(s["verdict"], "safe", "{cell}: {s:#}");
            assert_eq!(overlaps(&s), 0, "{cell}: {s:#}");
            assert_eq!(n(&s, &["lost_updates"]), 0, "{cell}: {s:#}");
            // Every acquisition whose request went unanswered was resolved once the cluster
            // answered (granted after all, or withdrawn and confirmed): none is left unknown.
            // (A release may be: its holder goes on, and the janitor retries it.)
            let sum = summary(&run, &cell);
            let unknown = history(&run, &cell)
                .into_iter()
                .filter(|e| e["op"] == "acquire" && e["kind"] == "info")
                .collect::<Vec<_>>();
            assert!(unknown.is_empty(), "{cell}: {unknown:?}");
            // Retry discipline while the even split lasted: backoff, not a busy loop (the
            // issue's bound is 20 requests per client-second), and with a 20 s acquire timeout
            // no client fails an acquisition inside a 4 s split.
            let split_window = &sum["faults"][2];
            assert_eq!(split_window["kind"], "partition", "{cell}: {split_window}");
            let rate = split_window["requests_per_client_s"].as_f64().unwrap();
            assert!(rate <= 20.0, "{cell}: {rate} requests per client-second");
            assert_eq!(
                n(split_window, &["most_failed_per_client"]),
                0,
                "{cell}: {split_window}"
            );
            let events = history(&run, &cell);
            let w = windows(&events);
            let kinds: Vec<&str> = w.iter().map(|w| w.0.as_str()).collect();
            assert_eq!(
                kinds,
                ["kill", "partition", "partition"],
                "{cell}: windows {w:?}"
            );
            // The isolated leader is cut from the three others (and they from it): 4 lines. Due
            // while the cluster reports no single leader (a member rejoining after the kill), the
            // window is recorded as not started, with the reason, and nothing is cut.
            let isolated = serde_json::from_str::<Vec<String>>(&w[1].1).unwrap();
            if isolated.is_empty() {
                let error = events
                    .iter()
                    .find(|e| e["op"] == "fault" && e["kind"] == "info" && e["t_us"] == w[1].3)
                    .and_then(|e| e["error"].as_str())
                    .unwrap_or_default();
                assert!(
                    error.contains("no leader"),
                    "{cell}: isolate-leader cut nothing: {error}"
                );
                eprintln!("{cell}: isolate-leader did not start: {error}");
            } else {
                assert_eq!(
                    isolated.len(),
                    4,
                    "{cell}: isolate-leader targets {isolated:?}"
                );
            }
            let (_, targets, split, healed) = &w[2];
            // Both halves are named: all four nodes.
            let named = serde_json::from_str::<Vec<String>>(targets).unwrap();
            assert_eq!(named.len(), 4, "{cell}: split targets {targets}");
            let g = grants(&events);
            // The split's end says when its rules were all in (`effect_us`) and when their
            // removal was asked for (`undo_us`); in between neither side has a majority, so
            // nothing may be granted (a grant decided just before the last rule went in may
            // still arrive, hence the 0.5 s).
            let end = events
                .iter()
                .find(|e| e["op"] == "fault" && e["kind"] != "invoke" && e["t_us"] == *healed)
                .expect("the split's end");
            let (effect, undo) = (n(end, &["effect_us"]), n(end, &["undo_us"]));
            assert!(
                *split <= effect && effect <= undo && undo <= *healed,
                "{cell}: {end}"
            );
            let inside: Vec<&u64> = g
                .iter()
                .filter(|t| **t > effect + 500_000 && **t < undo)
                .collect();
            assert!(
                inside.is_empty(),
                "{cell}: granted during the even split ({effect}..{undo} µs) at {inside:?}"
            );
            let before = g.iter().filter(|t| **t < w[0].2).count();
            let after = g.iter().filter(|t| **t > *healed).count();
            assert!(
                before > 0 && after > 0,
                "{cell}: {before} grants before the faults, {after} after the heal"
            );
            let first_after = g.iter().find(|t| **t > *healed).unwrap();
            table.push(format!(
                "{cell}: safe; split {:.1}..{:.1} s; first grant {:.0} ms after the heal; longest unavailable {} ms",
                *split as f64 / 1e6,
                *healed as f64 / 1e6,
                (first_after - healed) as f64 / 1e3,
                s["max_unavailable_ms"]
            ));
        }
    }
    eprintln!("{}", table.join("\n"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_client_paused_past_its_lease_overlaps_and_fencing_keeps_the_data() {
    let _turn = beside_others();
    let out = scratch("chaos-pause");
    let workload = |name: &str, resource: &str| {
        write(
            &out,
            &format!("{name}.toml"),
            &format!(
                "clients = 3\nkeys = 1\nhold = \"400ms\"\nthink = \"50ms\"\nduration = \"12s\"\n\
                 warmup = \"1s\"\nlease_ttl = \"2s\"\nrenew = true\nacquire_timeout = \"20s\"\n\
                 strategies = [\"herd\"]\nseed = 1\nclients_as = \"processes\"\n\
                 resource = \"{resource}\"\n"
            ),
        )
    };
    let fenced = workload("gc-fenced", "fenced");
    let unfenced = workload("gc-unfenced", "unfenced");
    // A holder stopped at 3 s for 6 s: three lease TTLs, keep-alives and watchdogs included.
    let schedule = write(
        &out,
        "gc.toml",
        "seed = 1\nexpect = \"unsafe\"\n[[faults]]\nkind = \"pause-client\"\ntarget = \"holder\"\n\
         start = \"3s\"\nduration = \"6s\"\n",
    );
    let res = run(
        &out,
        &["--chaos", schedule.to_str().unwrap()],
        &[fenced, unfenced],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    // Expected unsafe everywhere: findings, not failures.
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    let run = latest(&out);
    let mut table = Vec::new();
    for system in ["zookeeper", "etcd", "redis", "redlock"] {
        let fc = format!("{system}-herd-gc-fenced-gc-c3");
        let uc = format!("{system}-herd-gc-unfenced-gc-c3");
        let f = safety(&run, &fc);
        let u = safety(&run, &uc);
        for (cell, s) in [(&fc, &f), (&uc, &u)] {
            let w = windows(&history(&run, cell));
            assert!(
                w.len() == 1 && w[0].0 == "pause-client",
                "{cell}: one client pause, not {w:?}"
            );
            assert_eq!(s["verdict"], "unsafe", "{cell}: {s:#}");
            assert!(overlaps(s) > 0, "{cell}: {s:#}");
            assert_evidence_walks_to_events(&run, cell, s);
        }
        assert!(n(&u, &["lost_updates"]) > 0, "{uc}: {u:#}");
        assert!(n(&f, &["stale_accesses_rejected"]) > 0, "{fc}: {f:#}");
        assert_eq!(n(&f, &["lost_updates"]), 0, "{fc}: {f:#}");
        table.push(format!(
            "{system}: fenced overlaps {} rejected {} lost 0; unfenced overlaps {} lost {}",
            f["overlaps"],
            n(&f, &["stale_accesses_rejected"]),
            u["overlaps"],
            n(&u, &["lost_updates"])
        ));
    }
    eprintln!("{}", table.join("\n"));
    let _ = std::fs::remove_dir_all(&out);
}

fn clock_schedule(dir: &Path, name: &str, target: &str, expect: &str) -> String {
    write(
        dir,
        &format!("{name}.toml"),
        &format!(
            "seed = 3\nsystems = [\"redlock\"]\nexpect = \"{expect}\"\n[[faults]]\nkind = \"clock\"\n\
             target = \"{target}\"\nmode = \"jump\"\nby = \"30s\"\nstart = \"2s\"\nduration = \"1s\"\n"
        ),
    )
    .to_str()
    .unwrap()
    .to_string()
}

#[test]
fn redlock_grants_twice_when_a_majoritys_clocks_jump() {
    let _turn = beside_others();
    let out = scratch("chaos-clock");
    let workload = write(
        &out,
        "long-holds.toml",
        "clients = 2\nkeys = 1\nhold = \"3s\"\nthink = \"100ms\"\nduration = \"9s\"\n\
         warmup = \"0s\"\nlease_ttl = \"10s\"\nrenew = true\nacquire_timeout = \"20s\"\n\
         strategies = [\"herd\"]\nseed = 1\n",
    );
    // A majority jumped loses the holder its majority whatever it held. One master jumped is
    // no test: it breaks the lock only when the holder had a bare majority that included it
    // (seen once in CI, safe in earlier runs).
    let majority = clock_schedule(&out, "jump-majority", "majority", "unsafe");
    let res = run(
        &out,
        &["--systems", "redlock", "--chaos", &majority],
        &[workload],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    let run = latest(&out);

    let cell = "redlock-herd-long-holds-jump-majority-c2";
    let s = safety(&run, cell);
    let w = windows(&history(&run, cell));
    assert_eq!(
        serde_json::from_str::<Vec<String>>(&w[0].1).unwrap().len(),
        3,
        "{cell}: a majority of five: {w:?}"
    );
    assert_eq!(s["verdict"], "unsafe", "{cell}: {s:#}");
    // The holder was inside its lease and nobody told it: the service granted the lock twice.
    assert!(n(&s, &["overlaps", "granted_twice"]) > 0, "{cell}: {s:#}");
    assert_evidence_walks_to_events(&run, cell, &s);
    eprintln!(
        "{cell}: overlaps {}; first: {}",
        s["overlaps"], s["violations"][0]["what"]
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// PostgreSQL's session lock under the two client faults of the stores, on one cluster: the
/// clients cut off from the primary (the holder is told, nobody else is granted, the lock is out
/// of reach through the partition), and the holder's worker stopped past its lease (the
/// session, its socket open, keeps the lock: no overlap, a long unavailable window).
#[test]
fn postgres_keeps_a_cut_off_or_stopped_holders_lock_and_grants_it_to_nobody_else() {
    let _turn = beside_others();
    let out = scratch("chaos-stores");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schedule = |name: &str| root.join(format!("chaos/{name}.toml"));
    let res = run(
        &out,
        &[
            "--systems",
            "postgres",
            "--strategies",
            "native",
            "--duration",
            "20s",
            "--clients-as",
            "processes",
            "--chaos",
            schedule("partition-clients").to_str().unwrap(),
            "--chaos",
            schedule("pause-clients").to_str().unwrap(),
        ],
        &[root.join("workloads/held-locks.toml")],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    let run = latest(&out);
    let mut table = Vec::new();
    for (chaos, kind, targets, unavailable_ms) in [
        // Seed 12 puts the clients beside the replica: cut from the primary, pg1, for 8 s.
        (
            "partition-clients",
            "partition",
            "clients cut from pg1",
            7_500.0,
        ),
        // The holder stopped for 15 s from 3 s.
        ("pause-clients", "pause-client", "", 12_000.0),
    ] {
        let cell = format!("postgres-native-held-locks-{chaos}-c4");
        let sum = summary(&run, &cell);
        let faults = sum["faults"].as_array().expect("faults");
        assert_eq!(faults.len(), 1, "{cell}: {faults:#?}");
        assert_eq!(faults[0]["kind"], kind, "{cell}: {:#}", faults[0]);
        assert_eq!(faults[0]["started"], true, "{cell}: {:#}", faults[0]);
        let t = faults[0]["targets"].to_string();
        assert!(t.contains(targets), "{cell}: {t}");
        let s = &sum["safety"];
        assert_eq!(s["verdict"], "safe", "{cell}: {s:#}");
        assert_eq!(overlaps(s), 0, "{cell}: {s:#}");
        // Liveness, not safety: the lock was out of everyone's reach meanwhile.
        let unavailable = s["max_unavailable_ms"]
            .as_f64()
            .expect("max_unavailable_ms");
        assert!(
            unavailable >= unavailable_ms,
            "{cell}: {unavailable} ms: {s:#}"
        );
        if chaos == "partition-clients" {
            // The cut-off holder's client told it (its session was out of reach).
            assert!(n(&sum, &["lost_leases"]) >= 1, "{cell}: {sum:#}");
        }
        table.push(format!(
            "{cell}: lost leases {}, longest unavailable {unavailable:.0} ms",
            sum["lost_leases"]
        ));
    }
    eprintln!("{}", table.join("\n"));
    let _ = std::fs::remove_dir_all(&out);
}
