//! The leader kill and the even split on real clusters, through `lockbench run` as a user runs
//! it: ZooKeeper and etcd (4 nodes), herd and predecessor, a leader kill, the leader isolated,
//! then the even 2 | 2 split: safe, no overlap, no lost update, no acquisition left unknown,
//! retries backed off during the split, and no acquisition succeeds while it lasts.
//!
//! It times elections and recoveries, which a second test binary on a small machine would
//! stretch, so it runs alone:
// scripts/test: alone

mod common;

use common::cli_run::{
    history, latest, n, overlaps, run, safety, scratch, summary, windows, write,
};
use serde_json::Value;

/// Times of granted acquisitions.
fn grants(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e["op"] == "acquire" && e["kind"] == "ok")
        .map(|e| e["t_us"].as_u64().unwrap())
        .collect()
}

#[test]
fn zookeeper_and_etcd_stay_safe_through_a_leader_kill_and_the_even_split() {
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
            // recipes' bound is 20 requests per client-second), and with a 20 s acquire timeout
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
