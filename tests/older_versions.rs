//! The stores at their older versions (Debian bookworm's PostgreSQL 15, MariaDB 10.11 and
//! Memcached 1.6.18), each on a real cluster of its own image: a short `lockbench run` of
//! the default workload under every strategy the store offers by default, each cell locking,
//! judged safe, and recording the version its servers reported. The defaults (trixie's) are
//! what every other test runs; the older versions of ZooKeeper, etcd and Redis, and Valkey, run
//! in `.ci/run`'s version smoke.

use std::path::{Path, PathBuf};
use std::process::Command;

use lockbench::stats::CellSummary;

/// Runs `lockbench run --systems SYSTEM@VERSION` for 3 s cells into a fresh folder; the run's
/// finished cells.
fn run_version(system_at: &str) -> Vec<CellSummary> {
    let out = std::env::temp_dir().join(format!(
        "lockbench-test-older-{}-{}",
        system_at.replace('@', "-"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    let res = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            "--floor-samples",
            "0",
            "--duration",
            "3s",
            "--clients",
            "4",
        ])
        .args(["--systems", system_at])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run lockbench");
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        res.status.success(),
        "{system_at}: lockbench run failed: {stderr}"
    );
    let run: PathBuf = std::fs::canonicalize(out.join("latest")).expect("results/latest");
    let cells = read_cells(&run);
    let _ = std::fs::remove_dir_all(&out);
    cells
}

fn read_cells(run: &Path) -> Vec<CellSummary> {
    let text = std::fs::read_to_string(run.join("summary.json")).expect("the run's summary");
    let v: serde_json::Value = serde_json::from_str(&text).expect("summary parses");
    serde_json::from_value(v["cells"].clone()).expect("cells parse")
}

/// Every cell ran at `version`, locked, was judged safe, and reports a server version that
/// starts with `reported`.
fn assert_ran_at(cells: &[CellSummary], version: &str, reported: &str) {
    assert!(!cells.is_empty(), "no cell finished");
    for c in cells {
        assert_eq!(c.id.version.as_deref(), Some(version), "{}", c.id);
        assert!(c.acquisitions > 0, "{}: no acquisition", c.id);
        let verdict = c.safety.as_ref().map(|s| s.verdict.to_string());
        assert_eq!(verdict.as_deref(), Some("safe"), "{}", c.id);
        let server = c.server_version.as_deref().unwrap_or("absent");
        assert!(
            server.starts_with(reported),
            "{}: the servers reported {server}, not {reported}…",
            c.id
        );
    }
}

#[test]
fn postgres_15() {
    assert_ran_at(&run_version("postgres@15"), "15", "15.");
}

#[test]
fn mariadb_10_11() {
    assert_ran_at(&run_version("mariadb@10.11"), "10.11", "10.11.");
}

#[test]
fn memcached_1_6_18() {
    assert_ran_at(&run_version("memcached@1.6.18"), "1.6.18", "1.6.18");
}
