//! `lockbench run` as a user runs it, and what it writes: the run folder, each cell's
//! `summary.json` and `history.jsonl`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// An empty scratch folder of this test process, named after `name`.
pub fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// Writes `text` to `dir/file` and returns the path.
pub fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path
}

/// `lockbench run ARGS --out OUT --workload W...`, waited for. No handoff floor is measured
/// (`--floor-samples 0`, seconds per cluster): tests/floor.rs and tests/run_end_to_end.rs test
/// the floor, and these runs never read it.
pub fn run(out: &Path, args: &[&str], workloads: &[PathBuf]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbench"));
    cmd.arg("run").args(["--floor-samples", "0"]).args(args);
    cmd.arg("--out").arg(out);
    for w in workloads {
        cmd.arg("--workload").arg(w);
    }
    cmd.output().expect("run lockbench")
}

/// The run folder `out/latest` points to.
pub fn latest(out: &Path) -> PathBuf {
    std::fs::canonicalize(out.join("latest")).unwrap()
}

/// A cell's `summary.json`.
pub fn summary(run: &Path, cell: &str) -> Value {
    let path = run.join("cells").join(cell).join("summary.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// A cell's `safety`.
pub fn safety(run: &Path, cell: &str) -> Value {
    summary(run, cell)["safety"].clone()
}

/// A cell's history, one JSON value per line.
pub fn history(run: &Path, cell: &str) -> Vec<Value> {
    let path = run.join("cells").join(cell).join("history.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The count at `path` in `v`, failing the test if it is not one.
pub fn n(v: &Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64()
        .unwrap_or_else(|| panic!("{path:?} is not a count in {v:#}"))
}

/// Every violation names the history lines it comes from, and those lines exist.
pub fn assert_evidence_walks_to_events(run: &Path, cell: &str, s: &Value) {
    let violations = s["violations"].as_array().expect("violations");
    assert!(!violations.is_empty(), "{cell}: no violation listed: {s:#}");
    let lines = history(run, cell).len();
    for v in violations {
        let at = v["lines"].as_array().expect("lines");
        assert!(!at.is_empty(), "{cell}: {v}");
        for l in at {
            let l = l.as_u64().unwrap() as usize;
            assert!(l >= 1 && l <= lines, "{cell}: line {l} of {lines}");
        }
    }
}

/// The fault windows of a history: (fault, targets, invoke t_us, end t_us).
pub fn windows(events: &[Value]) -> Vec<(String, String, u64, u64)> {
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

/// The overlaps a safety verdict counts, of every kind.
pub fn overlaps(s: &Value) -> u64 {
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
