//! The plots exporter on a mock run folder, without Docker: every figure is drawn as PNG and
//! SVG, listed in plots/index.json, the SVGs are well-formed XML, the PNGs decode to the size
//! asked for, and the safety timeline of a cell with planted double grants shows them.

use std::path::{Path, PathBuf};

use lockbench::System;
use lockbench::plan::{Overrides, Plan};
use lockbench::recipe::mock::MockOptions;
use lockbench::report::plot_index::PlotIndex;
use lockbench::workload::Workload;

mod mock_support;

/// Six clients on one key, short holds, the fenced register; herd and predecessor.
const WORKLOAD: &str = "clients = 6\nkeys = 1\nhold = { kind = \"uniform\", min = \"200us\", max = \"2ms\" }\n\
    acquisitions = 300\nlease_ttl = \"10s\"\nacquire_timeout = \"5s\"\n\
    strategies = [\"herd\", \"predecessor\"]\nseed = 3\nresource = \"fenced\"\nexpect = \"unsafe\"\n";

/// Runs the mock (every 7th acquisition that finds the key held granted anyway) at 2 and 6
/// clients into a fresh folder; returns the run folder. Kept if LOCKBENCH_KEEP_PLOTS is set.
async fn mock_run(name: &str) -> (PathBuf, PathBuf) {
    let out = std::env::temp_dir().join(format!("lockbench-plots-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let wl = Workload::from_str(WORKLOAD, "plots").expect("workload");
    let overrides = Overrides {
        clients: Some(vec![2, 6]),
        ..Overrides::default()
    };
    let plan = Plan::expand("plots", &[System::Redis], &[wl], &overrides).expect("plan");
    let opts = MockOptions {
        overlap_every: Some(7),
        ttl: std::time::Duration::from_secs(10),
        ..MockOptions::default()
    };
    let outcome = mock_support::play(opts, plan, &out, name).await;
    assert_eq!(outcome.summaries.len(), 4);
    (out, outcome.folder)
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[tokio::test(flavor = "current_thread")]
async fn every_plot_is_drawn_listed_and_well_formed() {
    let (out, run) = mock_run("all").await;
    let index = PlotIndex::read(&run).expect("index");
    let kinds = |cell: bool| -> Vec<&str> {
        let mut k: Vec<&str> = index
            .plots
            .iter()
            .filter(|p| p.cell.is_some() == cell)
            .map(|p| p.kind.as_str())
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    };
    assert_eq!(
        kinds(false),
        [
            "herd-handoff",
            "herd-throughput",
            "herd-wakeups",
            "latency-distribution"
        ]
    );
    assert_eq!(
        kinds(true),
        ["fairness", "latency-over-time", "safety-timeline"]
    );
    assert_eq!(index.plots.len(), 4 + 4 * 3);
    for p in &index.plots {
        let svg_path = run.join("plots").join(&p.svg);
        let svg = std::fs::read_to_string(&svg_path).expect("svg written");
        let doc = roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("{}: not well-formed XML: {e}", svg_path.display()));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let width: u32 = doc
            .root_element()
            .attribute("width")
            .unwrap()
            .parse()
            .unwrap();
        let (w, h) = png_size(&run.join("plots").join(&p.png));
        assert_eq!(
            w, width,
            "{}: PNG and SVG of one figure share its size",
            p.png
        );
        assert!(h > 100);
        // Every figure has text, drawn with the embedded font (the PNG would fail without it).
        assert!(
            doc.descendants().any(|n| n.has_tag_name("text")),
            "{}",
            p.svg
        );
    }
    // The herd figures have a line per system × strategy, with a point at 2 and 6 clients.
    let wake = std::fs::read_to_string(run.join("plots/herd-wakeups.svg")).unwrap();
    assert!(wake.contains("redis herd") && wake.contains("redis predecessor"));
    if std::env::var_os("LOCKBENCH_KEEP_PLOTS").is_none() {
        let _ = std::fs::remove_dir_all(&out);
    } else {
        eprintln!("kept {}", run.display());
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_safety_timeline_shows_the_planted_double_grants_and_their_lines() {
    let (out, run) = mock_run("timeline").await;
    let cell = "redis-herd-plots-c6";
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("cells").join(cell).join("summary.json")).unwrap(),
    )
    .unwrap();
    let first = &summary["safety"]["violations"][0];
    let line = first["lines"][0]
        .as_u64()
        .expect("a violation with a history line");
    let svg =
        std::fs::read_to_string(run.join(format!("plots/{cell}.safety-timeline.svg"))).unwrap();
    assert!(
        svg.contains(&format!("line {line}")),
        "the first violation's history line is labelled"
    );
    assert!(svg.contains("unsafe"), "the verdict is in the title");
    // Overlaps are drawn in the violation colour (#D50000), and counted in the legend.
    assert!(
        svg.to_uppercase().contains("#D50000"),
        "no overlap drawn in red"
    );
    assert!(!svg.contains("overlapping holds: 0"));
    let _ = std::fs::remove_dir_all(&out);
}
