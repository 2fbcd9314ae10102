//! The runner with a checker that panics: Jepsen's `check-safe` inside a whole run.

use std::path::PathBuf;

use super::progress::PlainProgress;
use super::{MockBackend, RunFolder, run_on};
use crate::check::testkit::Panicking;
use crate::check::{PANICKED, PLANTED};
use crate::plan::{Overrides, Plan};
use crate::recipe::mock::MockOptions;
use crate::report::Exporters;
use crate::results::SafetyVerdict;
use crate::system::System;
use crate::workload::Workload;

const WORKLOAD: &str = r#"
clients = 4
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
seed = 3
"#;

fn scratch() -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-runner-panic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

#[tokio::test]
async fn a_checker_that_panics_makes_each_cell_unknown_with_its_message_and_the_run_goes_on() {
    PLANTED.with(|p| p.borrow_mut().push(|| Box::new(Panicking)));
    let wl = Workload::from_str(WORKLOAD, "panic-check").unwrap();
    let plan = Plan::expand("panicrun", &[System::Redis], &[wl], &Overrides::default()).unwrap();
    assert_eq!(plan.cells.len(), 2, "herd and predecessor");
    let out = scratch();
    let folder = RunFolder::create(Some(&out), "panic-check").unwrap();
    let backend = MockBackend::new(MockOptions::default());
    let outcome = run_on(
        &backend,
        plan,
        folder,
        &PlainProgress,
        &Exporters::files_only(),
    )
    .await;
    PLANTED.with(|p| p.borrow_mut().clear());
    let outcome = outcome.expect("the run does not abort");
    assert!(!outcome.interrupted);
    assert!(outcome.not_run.is_empty(), "every cell ran");
    assert_eq!(outcome.summaries.len(), 2);
    for s in &outcome.summaries {
        assert!(s.acquisitions > 0, "the clients worked");
        let safety = s.safety.as_ref().expect("a safety verdict");
        assert_eq!(safety.verdict, SafetyVerdict::Unknown, "{:?}", s.id);
        let note = safety
            .possible_violations
            .iter()
            .find(|v| v.checker == "panicking")
            .expect("the panic is the cell's note");
        assert_eq!(note.class.as_deref(), Some(PANICKED));
        assert!(
            note.what.contains("index 7 out of range for length 3"),
            "{}",
            note.what
        );
        assert!(
            safety.violations.is_empty(),
            "the correct mock broke nothing"
        );
    }
    // And the cells' files say the same, as `lockbench check` reads them.
    let stored = std::fs::read_to_string(outcome.folder.join("summary.json")).unwrap();
    assert!(stored.contains("checker_panicked"), "{stored}");
    let _ = std::fs::remove_dir_all(&out);
}

#[tokio::test]
async fn a_cluster_that_cannot_start_fails_its_own_cells_and_the_run_goes_on() {
    let wl = Workload::from_str(WORKLOAD, "start-fails").unwrap();
    let systems = [System::Zookeeper, System::Redis];
    let plan = Plan::expand("startfail", &systems, &[wl], &Overrides::default()).unwrap();
    let out = std::env::temp_dir().join(format!("lockbench-runner-start-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let folder = RunFolder::create(Some(&out), "start-fails").unwrap();
    let mut backend = MockBackend::new(MockOptions::default());
    backend.fail_start = vec![System::Zookeeper];
    let outcome = run_on(
        &backend,
        plan,
        folder,
        &PlainProgress,
        &Exporters::files_only(),
    )
    .await
    .expect("the run goes on past a cluster that does not start");
    // Redis, queued after ZooKeeper, was measured.
    assert_eq!(outcome.summaries.len(), 2, "{:?}", outcome.failed);
    assert!(
        outcome
            .summaries
            .iter()
            .all(|s| s.id.system == System::Redis)
    );
    // ZooKeeper's two cells failed, each with the reason and the nodes' last log lines.
    assert_eq!(outcome.failed.len(), 2);
    for f in &outcome.failed {
        assert!(f.id.starts_with("zookeeper-"), "{f:?}");
        assert!(
            f.reason.contains("its zookeeper cluster did not start"),
            "{f:?}"
        );
        let error = outcome
            .folder
            .join("cells")
            .join(&f.id)
            .join(crate::results::ERROR_FILE);
        let text = std::fs::read_to_string(&error).unwrap();
        assert!(text.contains("SLF4J: planted start-up failure"), "{text}");
    }
    assert_eq!(outcome.not_run.len(), 2, "failed cells are not run too");
    // The run's summary and report say which cells failed and why.
    let summary = std::fs::read_to_string(outcome.folder.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(
        summary["failed"].as_array().map(Vec::len),
        Some(2),
        "{summary}"
    );
    let report = std::fs::read_to_string(outcome.folder.join("report.md")).unwrap();
    assert!(report.contains("Cells that failed (2"), "{report}");
    let _ = std::fs::remove_dir_all(&out);
}
