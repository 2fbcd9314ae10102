//! `lockbench capacity`'s path without Docker: the sweep's plan (as the command makes it) run
//! through the mock backend, then the capacity report, its figure and the reports written
//! into the run folder; and `lockbench report` keeps the capacity figure when it redraws.

use lockbench::System;
use lockbench::capacity::sweep::{self, Sweep};
use lockbench::capacity::{Capacity, Slo};
use lockbench::recipe::Strategy;
use lockbench::recipe::mock::MockOptions;
use lockbench::report::Exporters;
use lockbench::report::plot_index::PlotIndex;
use lockbench::workload::Workload;

mod mock_support;

/// One key, short holds, a fixed number of acquisitions per cell.
const WORKLOAD: &str = "clients = 2\nkeys = 1\nhold = { kind = \"uniform\", min = \"200us\", max = \"1ms\" }\n\
    acquisitions = 200\nlease_ttl = \"10s\"\nacquire_timeout = \"5s\"\n\
    strategies = [\"predecessor\"]\nseed = 5\n";

#[tokio::test(flavor = "current_thread")]
async fn a_mock_sweep_writes_capacity_json_the_figure_and_keeps_them_on_report() {
    let out = std::env::temp_dir().join(format!("lockbench-capacity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let wl = Workload::from_str(WORKLOAD, "cap").expect("workload");
    let spec = Sweep {
        system: System::Redis,
        strategy: Strategy::Predecessor,
        clients: vec![4, 1, 2, 2],
        duration: None,
        seed: None,
    };
    let plan = spec.plan("cap", &wl).expect("plan");
    assert_eq!(
        plan.cells
            .iter()
            .map(|c| c.id().clients)
            .collect::<Vec<_>>(),
        [1, 2, 4],
        "one cell per distinct count, in order"
    );
    let outcome = mock_support::play(MockOptions::default(), plan, &out, "cap").await;
    assert_eq!(outcome.summaries.len(), 3);
    let run = outcome.folder;
    let slo = Slo { p99_us: 60_000_000 };
    let capacity =
        sweep::finish(&run, &outcome.summaries, Some(slo), &Exporters::reports()).expect("finish");

    // capacity.json holds the measured points as the cells' summaries have them.
    let stored: Capacity =
        serde_json::from_str(&std::fs::read_to_string(run.join("capacity.json")).unwrap())
            .expect("capacity.json parses");
    assert_eq!(stored, capacity);
    assert_eq!(
        stored.points.iter().map(|p| p.clients).collect::<Vec<_>>(),
        [1, 2, 4]
    );
    for (p, s) in stored.points.iter().zip(&outcome.summaries) {
        assert_eq!(p.throughput, s.throughput_per_s);
        assert_eq!(p.p99_us, s.acquire_latency_us.p99);
        assert!(p.throughput > 0.0 && p.acquisitions > 0, "{p:?}");
    }
    // A 60 s SLO is met by every mock cell (each acquires in well under a second).
    assert_eq!(stored.max_clients_within_slo, Some(4));
    let lines = sweep::summary_lines(&stored);
    assert!(lines[0].contains("redis predecessor"), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("max clients measured within 4")),
        "{lines:?}"
    );

    // The figure is drawn, listed run-level as "capacity", and shown by report.html.
    let check_listed = |when: &str| {
        let index = PlotIndex::read(&run).expect("index");
        let entry = index
            .plots
            .iter()
            .find(|p| p.kind == "capacity")
            .unwrap_or_else(|| panic!("{when}: no capacity entry in plots/index.json"));
        assert_eq!(entry.cell, None);
        assert_eq!(entry.svg, "capacity-redis-predecessor.svg");
        let svg = std::fs::read_to_string(run.join("plots").join(&entry.svg)).unwrap();
        roxmltree::Document::parse(&svg).expect("well-formed SVG");
        assert!(svg.contains("SLO 60 s"), "{when}: SLO line missing");
        assert!(run.join("plots/capacity-redis-predecessor.png").is_file());
        let html = std::fs::read_to_string(run.join("report.html")).unwrap();
        assert!(html.contains("Capacity: redis predecessor"), "{when}");
        // The capacity section in words and numbers, in both reports.
        assert!(html.contains("<section id=\"capacity\">"), "{when}");
        let md = std::fs::read_to_string(run.join("report.md")).unwrap();
        let section = md
            .split("\n## Capacity\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{when}: {md}"));
        assert!(
            section.contains("- USL fit: ") || section.contains("- USL fit: failed"),
            "{when}"
        );
        assert!(
            section.contains("| clients | acq/s measured | acq/s USL | p99 ms |"),
            "{when}"
        );
        let first = format!("| 1 | {:.1} |", stored.points[0].throughput);
        assert!(section.contains(&first), "{when}: {first} not in {section}");
    };
    check_listed("after the sweep");
    // `lockbench report` redraws from stored results and keeps the capacity figure.
    std::fs::remove_file(run.join("plots/capacity-redis-predecessor.svg")).unwrap();
    lockbench::report::rebuild::rebuild(&run, &Exporters::reports()).expect("rebuild");
    check_listed("after lockbench report");

    // A sweep of fewer than three counts is refused before anything runs.
    let two = Sweep {
        clients: vec![1, 2],
        ..spec
    };
    let e = two.plan("cap", &wl).unwrap_err().to_string();
    assert!(e.contains("at least 3 distinct client counts"), "{e}");
    if std::env::var_os("LOCKBENCH_KEEP_PLOTS").is_none() {
        let _ = std::fs::remove_dir_all(&out);
    } else {
        eprintln!("kept {}", run.display());
    }
}
