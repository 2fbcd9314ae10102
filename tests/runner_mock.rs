//! The runner end to end without Docker: the in-memory mock lock drives `runner::run_on` through
//! the history, the statistics and the exporters, in about two seconds.

use std::path::PathBuf;

use lockbench::System;
use lockbench::history::{CriticalSection, critical_sections, read_history};
use lockbench::plan::{Overrides, Plan};
use lockbench::recipe::Strategy;
use lockbench::recipe::mock::MockOptions;
use lockbench::report::Exporters;
use lockbench::runner::progress::PlainProgress;
use lockbench::runner::{MockBackend, RunFolder, run_on};
use lockbench::spec::Workload;
use lockbench::stats::CellSummary;

const WORKLOAD: &str = r#"
clients = 8
keys = 1
hold = { kind = "fixed", value = "1ms" }
think = { kind = "fixed", value = "0ms" }
arrival = "closed"
duration = "1s"
warmup = "0s"
lease_ttl = "10s"
renew = true
acquire_timeout = "5s"
strategies = ["herd", "predecessor"]
seed = 7
"#;

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-mock-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

async fn run(name: &str, options: MockOptions) -> (PathBuf, Vec<CellSummary>, u64) {
    let wl = Workload::from_str(WORKLOAD, "mock-hot").expect("workload");
    let plan =
        Plan::expand("mockrun", &[System::Redis], &[wl], &Overrides::default()).expect("plan");
    let out = scratch(name);
    let folder = RunFolder::create(Some(&out), "mock-hot").expect("folder");
    let backend = MockBackend::new(options);
    let outcome = run_on(
        &backend,
        plan,
        folder,
        &PlainProgress,
        &Exporters::files_only(),
    )
    .await
    .expect("run");
    assert!(!outcome.interrupted && outcome.not_run.is_empty());
    (outcome.folder, outcome.summaries, backend.planted())
}

/// Pairs of different clients whose holds [acquire ok, release invoke] overlap on one key.
fn overlaps(history: &std::path::Path) -> usize {
    let events = read_history(history).expect("history");
    let sections = critical_sections(&events);
    let end = |s: &CriticalSection| s.released_us.unwrap_or(u64::MAX);
    let mut n = 0;
    for (i, a) in sections.iter().enumerate() {
        n += sections[i + 1..]
            .iter()
            .take_while(|b| b.acquired_us < end(a))
            .filter(|b| b.client != a.client && b.key == a.key)
            .count();
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mock_run_writes_every_file_and_shows_the_herd() {
    let (folder, summaries, planted) = run("safe", MockOptions::default()).await;
    assert_eq!(planted, 0);
    assert_eq!(summaries.len(), 2);
    for f in ["plan.toml", "summary.json", "report.md"] {
        assert!(folder.join(f).is_file(), "{f} missing");
    }
    let by = |s: Strategy| summaries.iter().find(|c| c.id.strategy == s).expect("cell");
    let (herd, pred) = (by(Strategy::Herd), by(Strategy::Predecessor));
    for c in [herd, pred] {
        let dir = folder
            .join("cells")
            .join(format!("redis-{}-mock-hot-c8", c.id.strategy));
        for f in ["history.jsonl", "cell.json", "summary.json", "acquire.hgrm"] {
            assert!(dir.join(f).is_file(), "{}: {f} missing", dir.display());
        }
        // The folder alone gives back what the run wrote (what `lockbench check` relies on).
        let again = lockbench::check::evaluate(&dir).expect("evaluate the cell folder");
        let written: CellSummary =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(again.analysis.summary, written);
        assert_eq!(&written, c);
        assert!(
            c.acquisitions > 100,
            "{}: {} acquisitions",
            c.id.strategy,
            c.acquisitions
        );
        assert_eq!(
            overlaps(&dir.join("history.jsonl")),
            0,
            "a correct lock never overlaps"
        );
        assert!(c.requests_total >= c.acquisitions);
        assert_eq!(c.fallback_polls, 0);
    }
    let (wh, wp) = (
        herd.wakeups_per_acquisition.expect("herd wake-ups"),
        pred.wakeups_per_acquisition.expect("predecessor wake-ups"),
    );
    assert!(
        wh > 2.0 * wp,
        "herd {wh:.2} vs predecessor {wp:.2} wake-ups per acquisition"
    );
    assert!(wp <= 1.0, "one release wakes one queued waiter: {wp:.2}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unsafe_mock_leaves_overlaps_in_the_history() {
    let (folder, summaries, planted) = run(
        "unsafe",
        MockOptions {
            overlap_every: Some(10),
            ..MockOptions::default()
        },
    )
    .await;
    // Every 10th acquisition is granted at once; it overlaps when the key was held then.
    assert!(planted > 0, "planted {planted}");
    let mut seen = 0;
    for c in &summaries {
        let h = folder
            .join("cells")
            .join(format!("redis-{}-mock-hot-c8", c.id.strategy))
            .join("history.jsonl");
        seen += overlaps(&h);
    }
    assert!(
        seen > 0,
        "the planted double grants show in the history ({planted} planted)"
    );
}

fn check(args: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("check")
        .args(args)
        .output()
        .expect("run lockbench check")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_recomputes_a_run_folder_offline_and_rewrites_only_when_asked() {
    let (folder, summaries, _) = run("check", MockOptions::default()).await;
    let out = check(&[folder.as_os_str()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("| redis | herd | mock-hot |"), "{stdout}");
    assert!(
        stderr.contains("2 cells; every stored summary matches"),
        "{stderr}"
    );

    // A summary that no longer says what the history says is named, and left alone.
    let cell = folder.join("cells").join("redis-herd-mock-hot-c8");
    let path = cell.join("summary.json");
    let mut tampered = summaries[0].clone();
    tampered.acquisitions += 1;
    let text = serde_json::to_string_pretty(&tampered).unwrap();
    std::fs::write(&path, &text).unwrap();
    let out = check(&[folder.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 of 2 cells differ"), "{stderr}");
    assert!(stderr.contains("redis-herd-mock-hot-c8"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "rewrites nothing"
    );

    // --write puts back what the history says; one cell folder can be checked alone.
    let out = check(&[cell.as_os_str(), std::ffi::OsStr::new("--write")]);
    assert!(out.status.success());
    let back: CellSummary = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(back, summaries[0]);

    let out = check(&[folder.join("cells").as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not a lockbench run or cell folder"),
        "{stderr}"
    );
}
