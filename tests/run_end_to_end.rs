//! `lockbench run` end to end on real clusters: a tiny comparison (two systems, both strategies,
//! hot-lock's 16 clients, 5 s cells) writes every promised file, each parses, and herd wakes more than predecessor;
//! Ctrl-C keeps the finished cells, names the rest, and leaves no container behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lockbench::stats::CellSummary;

/// One workload at one client count (the default run sweeps three).
const HOT_LOCK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/hot-lock.toml");

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn tiny_run_writes_every_file_and_herd_wakes_more() {
    let out = scratch("run");
    let res = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            "--systems",
            "redis,etcd",
            "--workload",
            HOT_LOCK,
            "--duration",
            "5s",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("run lockbench");
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "lockbench run failed: {stderr}");
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        stdout.contains("| system | version | strategy |"),
        "no comparison table: {stdout}"
    );
    assert_reported_versions(&stdout);

    let run = std::fs::canonicalize(out.join("latest")).expect("results/latest points at the run");
    let plan: toml::Value =
        toml::from_str(&std::fs::read_to_string(run.join("plan.toml")).unwrap()).unwrap();
    assert_eq!(plan["cells"].as_array().unwrap().len(), 4);
    assert!(
        std::fs::read_to_string(run.join("report.md"))
            .unwrap()
            .contains(&format!(
                "| redis | {}.",
                lockbench::system::System::Redis.default_version().name()
            ))
    );
    let summary = read_json(&run.join("summary.json"));
    assert_eq!(summary["schema_version"], lockbench::stats::SCHEMA_VERSION);
    assert_eq!(summary["cells"].as_array().unwrap().len(), 4);

    for system in ["redis", "etcd"] {
        let mut wakeups = Vec::new();
        for strategy in ["herd", "predecessor"] {
            let cell = run
                .join("cells")
                .join(format!("{system}-{strategy}-hot-lock-c16"));
            let events = lockbench::history::read_history(&cell.join("history.jsonl"))
                .expect("history parses");
            assert!(!events.is_empty());
            let hgrm = std::fs::read_to_string(cell.join("acquire.hgrm")).unwrap();
            assert!(hgrm.contains("Percentile"), "{hgrm}");
            let s: CellSummary = serde_json::from_value(read_json(&cell.join("summary.json")))
                .expect("summary parses");
            assert!(
                s.acquisitions > 20,
                "{system}/{strategy}: only {} acquisitions",
                s.acquisitions
            );
            assert_eq!(s.timeouts, 0, "{system}/{strategy}");
            let safety = s.safety.as_ref().expect("every cell carries a verdict");
            assert_eq!(
                safety.verdict,
                lockbench::check::SafetyVerdict::Safe,
                "{system}/{strategy}: {safety:#?}"
            );
            assert_eq!(safety.lost_updates, 0);
            assert!(s.errors.is_empty(), "{system}/{strategy}: {:?}", s.errors);
            assert!(s.acquire_latency_us.p99 >= s.acquire_latency_us.p50);
            // The cluster's handoff floor, measured before its cells, and the cell against it.
            let floor = s.handoff_floor.as_ref().expect("the floor was measured");
            assert_eq!(
                floor.samples,
                lockbench::plan::DEFAULT_FLOOR_SAMPLES as u64,
                "{floor:?}"
            );
            assert_eq!(floor.failed, 0, "{floor:?}");
            assert!(
                floor.p50_us > 0 && floor.p50_us <= floor.p99_us,
                "{floor:?}"
            );
            let ratio = s.handoff_over_floor.expect("a ratio to the floor");
            let want = s.handoff_latency_us.p50 as f64 / floor.p50_us as f64;
            assert!((ratio - want).abs() < 1e-9, "{ratio} against {want}");
            wakeups.push(s.wakeups_per_acquisition.expect("wakeups recorded"));
        }
        eprintln!(
            "{system}: wakeups/acq herd {:.2}, predecessor {:.2}",
            wakeups[0], wakeups[1]
        );
        assert!(
            wakeups[0] > wakeups[1] * 2.0,
            "{system}: herd {:.2} vs predecessor {:.2}",
            wakeups[0],
            wakeups[1]
        );
    }

    // The folder alone, with no Docker, gives back what the run wrote and printed.
    let check = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("check")
        .arg(&run)
        .output()
        .expect("run lockbench check");
    let check_err = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(0), "{check_err}");
    assert!(
        check_err.contains("4 cells; every stored summary matches"),
        "{check_err}"
    );
    let table = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with('|'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        table(&String::from_utf8_lossy(&check.stdout)),
        table(&stdout),
        "check prints the table run printed"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn ctrl_c_keeps_finished_cells_and_names_the_rest() {
    let out = scratch("interrupt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args([
            "run",
            "--systems",
            "redlock,redis",
            "--workload",
            HOT_LOCK,
            "--duration",
            "3s",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lockbench run");
    // Wait until the first cell is written, then interrupt as Ctrl-C does.
    let t = Instant::now();
    let first = loop {
        let found = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut d| d.find_map(|e| e.ok()))
            .map(|e| e.path());
        if let Some(run) = found {
            let cell = run.join("cells/redlock-herd-hot-lock-c16/summary.json");
            if cell.exists() {
                break run;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no cell finished within 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let run_id = read_plan_run_id(&first);
    let code = common::interrupt_and_wait(&mut child, "INT", "run");
    assert_eq!(code, Some(130));
    let summary = read_json(&first.join("summary.json"));
    assert_eq!(summary["interrupted"], true);
    let not_run: Vec<String> = summary["not_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(
        not_run.contains(&"redis-predecessor-hot-lock-c16".to_string()),
        "{not_run:?}"
    );
    let cells = summary["cells"].as_array().unwrap();
    assert!(
        cells
            .iter()
            .any(|c| c["system"] == "redlock" && c["strategy"] == "herd")
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(common::assert_no_leftovers(&run_id));
    let _ = std::fs::remove_dir_all(&out);
}

fn read_plan_run_id(run: &Path) -> String {
    let plan: toml::Value =
        toml::from_str(&std::fs::read_to_string(run.join("plan.toml")).unwrap()).unwrap();
    plan["run_id"].as_str().unwrap().to_string()
}

/// The comparison table's version column is what the servers reported, at the default versions.
fn assert_reported_versions(stdout: &str) {
    let default = |s: lockbench::system::System| s.default_version().name().to_string();
    for (system, version) in [
        ("redis", default(lockbench::system::System::Redis)),
        ("etcd", default(lockbench::system::System::Etcd)),
    ] {
        assert!(
            stdout.contains(&format!("| {system} | {version}.")),
            "{system} did not report version {version}: {stdout}"
        );
    }
}
