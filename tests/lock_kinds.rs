//! The lock kinds on real clusters: a reentrant lock on every system under both strategies
//! (`workloads/reentrant.toml`, 3 s cells), each cell judged by the reentrant checker, its
//! figures counting outer acquisitions, and its re-entries costed apart with no request sent.

use std::path::PathBuf;
use std::process::Command;

use lockbench::stats::CellSummary;

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

#[test]
fn reentrant_lock_on_every_system_and_strategy() {
    let out = scratch("kinds");
    let workload = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/reentrant.toml");
    let res = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            "--workload",
            workload,
            "--duration",
            "3s",
            "--clients",
            "8",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run lockbench");
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "lockbench run failed: {stderr}");
    let run = std::fs::canonicalize(out.join("latest")).expect("results/latest points at the run");
    let mut cells = 0;
    for system in ["zookeeper", "etcd", "redis", "redlock"] {
        for strategy in ["herd", "predecessor"] {
            let cell = run
                .join("cells")
                .join(format!("{system}-{strategy}-reentrant-c8"));
            let text = std::fs::read_to_string(cell.join("summary.json"))
                .unwrap_or_else(|e| panic!("{}: {e}", cell.display()));
            let s: CellSummary = serde_json::from_str(&text).expect("summary parses");
            let at = format!("{system}/{strategy}");
            assert!(s.acquisitions > 10, "{at}: {} acquisitions", s.acquisitions);
            let safety = s.safety.as_ref().expect("every cell carries a verdict");
            assert_eq!(
                safety.verdict,
                lockbench::check::SafetyVerdict::Safe,
                "{at}: {safety:#?}"
            );
            assert_eq!(safety.releases_by_non_holder, Some(0), "{at}");
            let r = s
                .reentry
                .as_ref()
                .expect("a reentrant cell costs its re-entries");
            // Two re-entries per counted outer grant (depth 3); a holder stopped by the cell's
            // end may not have made both.
            assert!(
                r.reentries == 2 * s.acquisitions,
                "{at}: {} re-entries for {} acquisitions",
                r.reentries,
                s.acquisitions
            );
            assert_eq!((r.refused, r.requests), (0, 0), "{at}");
            // A re-entry is counted on the client: far below a server round trip.
            assert!(r.latency_us.p50 < s.acquire_latency_us.p50, "{at}: {r:?}");
            cells += 1;
        }
    }
    assert_eq!(cells, 8);
    let _ = std::fs::remove_dir_all(&out);
}
