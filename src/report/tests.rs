//! The reports rendered from a hand-made [`RunView`] whose folder does not exist: rendering
//! reads no file, and both formats show the one section list in its order.

use std::path::Path;

use super::model::{RunView, StoredPlan};
use super::plot_index::{PlotEntry, PlotIndex};
use super::sections::{Section, sections};
use super::{html, markdown};
use crate::capacity::Capacity;
use crate::capacity::report::tests::{cell, synthetic};
use crate::results::{CellSummary, Safety, SafetyVerdict, Violation};

/// Nothing is ever created here: a renderer that opened or wrote a file under it would fail
/// or leave it behind.
const NOWHERE: &str = "/nonexistent/lockbench-report-tests/run-1";

/// A cell that broke its lock once, with a fault window.
fn unsafe_cell() -> CellSummary {
    let mut c = cell(3, 50.0, 20_000, 500);
    c.id.chaos = "kill".into();
    // Held 4.1 ms for the 3 ms asked: a pacing row.
    c.hold_requested_us.count = 500;
    c.hold_requested_us.p50 = 3_000;
    c.hold_time_us.count = 500;
    c.hold_time_us.p50 = 4_100;
    c.safety = Some(Safety {
        verdict: SafetyVerdict::Unsafe,
        violations: vec![Violation {
            checker: "mutual_exclusion".into(),
            class: Some("granted_twice".into()),
            what: "clients 1 and 2 held k at once".into(),
            key: Some("k".into()),
            clients: vec![1, 2],
            tokens: vec![],
            t_us: vec![10, 20],
            lines: vec![7, 9],
        }],
        ..Safety::default()
    });
    c.faults = vec![
        serde_json::from_value(serde_json::json!({
            "kind": "kill", "targets": ["n1"], "start_us": 1_000_000, "end_us": 2_000_000,
            "started": true, "acquisitions": 4, "verdict": "unsafe", "overlaps": 1,
            "possible_overlaps": 0, "lost_updates": 0, "stale_accesses_rejected": 0,
            "token_regressions": 0, "lost_leases": 2, "errors": {}
        }))
        .expect("a fault window"),
    ];
    c
}

/// A view with every section: repetitions, a capacity report, an unsafe cell, a fault window,
/// a cell not run, a plot with its image, a plan.
fn every_section() -> RunView {
    let mut run = RunView::empty(Path::new(NOWHERE));
    let mut cells = synthetic();
    for (i, c) in cells.iter_mut().enumerate() {
        c.id.repetition = Some(1 + i as u32 % 2);
    }
    cells.push(unsafe_cell());
    run.cells = cells;
    run.not_run = vec!["etcd-predecessor-w-c12".into()];
    run.interrupted = true;
    run.capacity = Ok(Some(
        Capacity::of(&synthetic(), None).expect("the synthetic sweep"),
    ));
    run.plots.index = PlotIndex {
        plots: vec![PlotEntry {
            kind: "herd-wakeups".into(),
            title: "Wake-ups".into(),
            caption: "how to read it".into(),
            svg: "herd-wakeups.svg".into(),
            png: "herd-wakeups.png".into(),
            cell: None,
        }],
    };
    run.plots
        .images
        .insert("herd-wakeups.svg".into(), b"<svg/>".to_vec());
    run.plan = StoredPlan::Stored {
        text: "run_id = \"x\"\n".into(),
        plan: Err("plan.toml: a hand-made test plan".into()),
    };
    run
}

#[test]
fn a_hand_made_view_renders_every_section_without_a_file() {
    let run = every_section();
    let ids: Vec<&str> = sections(&run).iter().map(Section::id).collect();
    assert_eq!(
        ids,
        [
            "comparison",
            "repetitions",
            "capacity",
            "pacing",
            "safety",
            "faults",
            "not-run",
            "plots",
            "plan",
            "environment"
        ]
    );
    let md = markdown::render(&run);
    let page = html::page(&run);
    assert!(!Path::new(NOWHERE).exists(), "a renderer made the folder");

    // Each section's content, as the view has it.
    assert!(md.starts_with("# lockbench report\n\n| system |"), "{md}");
    assert!(md.contains("\n## Repetitions\n"), "{md}");
    assert!(md.contains("| etcd-predecessor-w-c1 | 1 |"), "{md}");
    assert!(md.contains("\n## Capacity\n\n- "), "{md}");
    assert!(
        md.contains("| 10 | 3.4 |"),
        "the capacity table's last point: {md}"
    );
    assert!(
        md.contains("(`cells/etcd-predecessor-w-kill-c3/history.jsonl` lines 7, 9)"),
        "{md}"
    );
    assert!(md.contains("| kill | n1 | 1.000 |"), "{md}");
    assert!(md.contains("\n## Pacing\n"), "{md}");
    assert!(
        md.contains("| etcd-predecessor-w-kill-c3 | hold | 3.00 | 4.10 | +1.10 |"),
        "{md}"
    );
    assert!(
        md.contains("\nThe run was interrupted. Cells not run: etcd-predecessor-w-c12\n"),
        "{md}"
    );
    assert!(md.contains("![Wake-ups](plots/herd-wakeups.png)"), "{md}");
    assert!(
        md.ends_with("\n## Environment\n\n- environment: not recorded\n- clusters: not recorded\n")
    );

    assert!(
        page.contains("not run: etcd-predecessor-w-c12"),
        "the header"
    );
    assert!(
        page.contains("data:image/svg+xml;base64,PHN2Zy8+"),
        "the inlined image"
    );
    assert!(page.contains("plan.toml: a hand-made test plan"));
    assert!(page.contains("<pre>run_id = &quot;x&quot;\n</pre>"));
    assert!(page.contains("<a href=\"#faults\">Faults</a>"));
    assert!(
        page.contains("<section id=\"pacing\">"),
        "the pacing section"
    );

    // The view without its optional parts: those sections are gone, the rest stay.
    let mut calm = run.clone();
    calm.cells.retain(|c| c.id.repetition.is_none());
    (calm.capacity, calm.not_run, calm.interrupted) = (Ok(None), Vec::new(), false);
    let ids: Vec<&str> = sections(&calm).iter().map(Section::id).collect();
    assert_eq!(
        ids,
        [
            "comparison",
            "pacing",
            "safety",
            "faults",
            "plots",
            "plan",
            "environment"
        ]
    );
    let md = markdown::render(&calm);
    assert!(!md.contains("## Repetitions") && !md.contains("## Capacity"));
    assert!(!md.contains("Cells not run"));
}

/// The order of the sections each format shows, read from its output: Markdown's `## `
/// headings, HTML's `<section id=...>`.
fn shown_order(md: &str, page: &str) -> (Vec<String>, Vec<String>) {
    let md_ids = md
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| h.to_lowercase())
        .collect();
    let html_ids = page
        .split("<section id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect();
    (md_ids, html_ids)
}

#[test]
fn markdown_and_html_show_the_sections_in_one_order() {
    let run = every_section();
    let (md, page) = shown_order(&markdown::render(&run), &html::page(&run));
    // The sections both show a heading for, in each one's order.
    let both: Vec<&String> = md.iter().filter(|id| page.contains(id)).collect();
    let in_html: Vec<&String> = page.iter().filter(|id| md.contains(id)).collect();
    assert_eq!(both, in_html, "markdown {md:?}, html {page:?}");
    for id in [
        "repetitions",
        "capacity",
        "pacing",
        "safety",
        "faults",
        "plots",
        "environment",
    ] {
        assert!(
            both.iter().any(|x| *x == id),
            "{id} in both: markdown {md:?}, html {page:?}"
        );
    }
    // And that order is the list's.
    let list: Vec<&str> = sections(&run).iter().map(Section::id).collect();
    let positions: Vec<usize> = both
        .iter()
        .map(|id| list.iter().position(|l| l == id).expect("a listed section"))
        .collect();
    assert!(positions.is_sorted(), "{both:?} against {list:?}");
}

/// Every file of `dir` (recursively) with its text up to its first `#[cfg(test)]`.
fn sources(dir: &Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).expect("src/report") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            out.push((path, code.to_string()));
        }
    }
}

#[test]
fn only_the_loader_and_the_writer_touch_files() {
    // The loader (model.rs), the writer, `lockbench report`'s reading of stored summaries
    // (rebuild.rs) and the index's reader for tests and tools (plot_index.rs).
    let allowed = [
        "model.rs",
        "writer.rs",
        "rebuild.rs",
        "plot_index.rs",
        "tests.rs",
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 15, "{} files read", files.len());
    let mut found = Vec::new();
    for (path, code) in &files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if allowed.contains(&name.as_ref()) {
            continue;
        }
        for io in [
            "std::fs",
            "fs::",
            "File::open",
            "File::create",
            "read_history",
            "RunEnvironment::read",
            "file::read",
            "BitMapBackend::new",
            "println!",
        ] {
            if code.contains(io) {
                found.push(format!("{}: {io}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "file I/O in a renderer: {found:?}");
}

#[test]
fn a_reentrant_cell_gets_a_re_entry_table_in_both_reports_and_others_none() {
    use crate::results::{LatencySummary, ReentryCost};
    let plain = cell(3, 50.0, 20_000, 500);
    assert!(super::sections::reentry(std::slice::from_ref(&plain)).is_none());
    let mut reentrant = cell(3, 50.0, 20_000, 500);
    reentrant.reentry = Some(ReentryCost {
        reentries: 2 * reentrant.acquisitions,
        refused: 1,
        requests: 0,
        latency_us: LatencySummary {
            count: 2 * reentrant.acquisitions,
            p50: 3,
            p99: 11,
            ..LatencySummary::default()
        },
    });
    let t = super::sections::reentry(&[plain, reentrant.clone()]).expect("one reentrant cell");
    assert_eq!(t.rows.len(), 1, "only the reentrant cell");
    let row = &t.rows[0];
    assert_eq!(row[0], reentrant.id.to_string());
    assert_eq!(
        row[1..7],
        [
            reentrant.acquisitions.to_string(),
            (2 * reentrant.acquisitions).to_string(),
            "1".into(),
            "0".into(),
            "3".into(),
            "11".into()
        ]
    );
    let run = every_section();
    let section = Section::Reentry(t);
    assert_eq!(section.id(), "reentry");
    let md = markdown::section(&run, &section);
    assert!(md.starts_with("\n## Re-entries\n"), "{md}");
    assert!(md.contains(&format!("| {} |", reentrant.id)), "{md}");
    let page = html::section(&run, &section);
    assert!(page.starts_with("<section id=\"reentry\">"), "{page}");
    assert!(page.contains(&reentrant.id.to_string()), "{page}");
}

#[test]
fn rwlock_and_semaphore_cells_get_their_tables_in_both_reports_and_others_none() {
    use super::kind_tables;
    use crate::results::{LatencySummary, ModeFigures, RwLockFigures, SemaphoreFigures};
    let plain = cell(3, 50.0, 20_000, 500);
    assert!(kind_tables::rwlock(std::slice::from_ref(&plain)).is_none());
    assert!(kind_tables::semaphore(std::slice::from_ref(&plain)).is_none());
    let mode = |per_s: f64, p50: u64, p99: u64| ModeFigures {
        acquisitions: 10,
        per_s,
        latency_us: LatencySummary {
            count: 10,
            p50,
            p99,
            ..LatencySummary::default()
        },
    };
    let mut rw = cell(4, 50.0, 20_000, 500);
    rw.rwlock = Some(RwLockFigures {
        readers: mode(120.0, 1_500, 4_000),
        writers: mode(12.5, 2_500, 9_000),
        writer_wait_max_us: 31_000,
        writer_wait_p99_us: 30_000,
        reader_wait_p99_us: 4_100,
        concurrent_readers_mean: 2.345,
        concurrent_readers_max: 5,
    });
    let mut sem = cell(5, 50.0, 20_000, 500);
    sem.semaphore = Some(SemaphoreFigures {
        permits: 3,
        utilisation: 0.6667,
        holders_max: 3,
        wakeups_per_grant: None,
    });
    let cells = [plain, rw.clone(), sem.clone()];
    let t = kind_tables::rwlock(&cells).expect("one rwlock cell");
    assert_eq!(t.rows.len(), 1, "only the rwlock cell");
    assert_eq!(
        t.rows[0],
        [
            rw.id.to_string(),
            "120.0".into(),
            "1.50".into(),
            "4.00".into(),
            "12.5".into(),
            "2.50".into(),
            "9.00".into(),
            "31.00".into(),
            "2.35".into(),
            "5".into()
        ]
    );
    let s = kind_tables::semaphore(&cells).expect("one semaphore cell");
    assert_eq!(
        s.rows,
        [[
            sem.id.to_string(),
            "3".to_string(),
            "66.7 %".into(),
            "3".into(),
            "n/a".into()
        ]]
    );
    let mut run = every_section();
    run.cells.extend([rw.clone(), sem.clone()]);
    let ids: Vec<&str> = sections(&run).iter().map(Section::id).collect::<Vec<_>>();
    assert!(
        ids.contains(&"rwlock") && ids.contains(&"semaphore"),
        "{ids:?}"
    );
    for (section, title, id) in [
        (Section::RwLock(t), "Read-write lock", &rw.id),
        (Section::Semaphore(s), "Semaphore", &sem.id),
    ] {
        let md = markdown::section(&run, &section);
        assert!(md.starts_with(&format!("\n## {title}\n")), "{md}");
        assert!(md.contains(&format!("| {id} |")), "{md}");
        let page = html::section(&run, &section);
        assert!(
            page.starts_with(&format!("<section id=\"{}\">", section.id())),
            "{page}"
        );
        assert!(page.contains(&format!("<h2>{title}</h2>")), "{page}");
        assert!(page.contains(&id.to_string()), "{page}");
    }
    assert!(
        !sections(&every_section())
            .iter()
            .any(|s| matches!(s, Section::RwLock(_) | Section::Semaphore(_))),
        "no table without a cell of the kind"
    );
}

#[test]
fn a_chaos_cell_whose_faults_never_started_is_marked_untested_unless_it_broke() {
    use super::table::{Standing, standing, verdict};
    use crate::check::expectation::{Judged, Judgement};
    use crate::results::Expect;
    let mut quiet = unsafe_cell();
    quiet.faults[0].started = false;
    quiet.faults[0].error = Some("start: no leader to isolate".into());
    let safety = quiet.safety.as_mut().unwrap();
    (safety.verdict, safety.expected) = (SafetyVerdict::Safe, Expect::Safe);
    assert_eq!(verdict(&quiet), "safe (no fault took effect)");
    assert_eq!(standing(&quiet), Standing::Doubtful);
    let judged = Judgement::of_summaries(std::slice::from_ref(&quiet));
    assert_eq!(judged.cells[0].judged(), Judged::Untested);
    assert!(
        judged.lines(true)[0].contains(
            "schedule kill injected no fault: its 1 window(s) did not start \
             (start: no leader to isolate)"
        ),
        "{:?}",
        judged.lines(true)
    );
    // No window at all (the cell ended before the first fault) is untested too.
    quiet.faults.clear();
    assert_eq!(verdict(&quiet), "safe (no fault took effect)");
    // The same cell with its fault started is plainly safe; broken stays broken without one.
    let mut ran = unsafe_cell();
    ran.safety.as_mut().unwrap().verdict = SafetyVerdict::Safe;
    assert_eq!(verdict(&ran), "safe");
    let mut broke = unsafe_cell();
    broke.faults.clear();
    assert_eq!(verdict(&broke), "UNSAFE");
    assert_eq!(standing(&broke), Standing::Broken);
}

#[test]
fn findings_come_first_in_both_reports_when_both_strategies_ran() {
    let mut run = RunView::empty(Path::new(NOWHERE));
    for (strategy, tput) in [
        (crate::recipe::Strategy::Herd, 40.0),
        (crate::recipe::Strategy::Predecessor, 100.0),
    ] {
        let mut c = cell(32, tput, 20_000, 500);
        c.id.strategy = strategy;
        run.cells.push(c);
    }
    let ids: Vec<&str> = sections(&run).iter().map(Section::id).collect();
    assert_eq!(ids[..2], ["findings", "comparison"]);
    let md = markdown::render(&run);
    assert!(
        md.starts_with("# lockbench report\n\n\n## Findings\n"),
        "{md}"
    );
    assert!(
        md.contains("- **etcd**: predecessor wins 1 of 1 comparisons"),
        "{md}"
    );
    assert!(
        md.contains("  - throughput (acquisitions/s): predecessor higher at 32 clients (2.5×"),
        "{md}"
    );
    assert!(
        md.contains(".\n\n| system |"),
        "a blank line before the table: {md}"
    );
    let page = html::page(&run);
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} in {page}"));
    assert!(at("<section id=\"findings\">") < at("<section id=\"comparison\">"));
    assert!(page.contains("<li><strong>etcd</strong>: predecessor wins 1 of 1 comparisons"));
    // One strategy alone: no findings section.
    run.cells.pop();
    assert_eq!(sections(&run)[0].id(), "comparison");
}

#[test]
fn the_environment_lists_each_clusters_settings_and_an_old_cluster_file_says_not_recorded() {
    use crate::environment::RunEnvironment;
    use crate::system::settings::SettingsRecord;
    let dir = std::env::temp_dir().join(format!("lockbench-settings-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("clusters")).unwrap();
    let zk = crate::system::System::Zookeeper.facts().settings;
    for (file, defaults) in [("zookeeper.json", false), ("zookeeper-n4.json", true)] {
        let record = serde_json::json!({
            "system": "zookeeper",
            "server_settings": SettingsRecord::of(zk, defaults),
        });
        std::fs::write(dir.join("clusters").join(file), record.to_string()).unwrap();
    }
    std::fs::write(dir.join("clusters/etcd.json"), r#"{"system":"etcd"}"#).unwrap();
    let env = RunEnvironment::read(&dir);
    let md = markdown::environment_section(&env);
    assert!(
        md.contains("| etcd.json | etcd | 0 | not recorded | none | n/a | not recorded |"),
        "{md}"
    );
    assert!(md.contains("| lockbench's |"), "{md}");
    assert!(
        md.contains("| the packages' defaults (--server-defaults) |"),
        "{md}"
    );
    assert!(
        md.contains("| zookeeper.json | server | `tickTime` | 250 ms | 2000 ms |"),
        "{md}"
    );
    // With the packages' defaults only the fixed settings differ.
    assert!(
        !md.contains("| zookeeper-n4.json | server | `tickTime` |"),
        "{md}"
    );
    assert!(
        md.contains("| zookeeper-n4.json | server | `maxClientCnxns` | 0 (no limit) | 60 |"),
        "{md}"
    );
    let page = html::settings_table(&env);
    assert!(
        page.contains("<td><code>tickTime</code></td><td>250 ms</td><td>2000 ms</td>"),
        "{page}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three repetitions of a chaos cell: unsafe (granted twice) in the first and third, safe in
/// the second; each with one fault window, recovering after 800, 1 000 and 3 000 ms.
fn repeated_chaos_cells() -> Vec<CellSummary> {
    (1..=3u32)
        .map(|r| {
            let mut c = unsafe_cell();
            c.id.repetition = Some(r);
            let s = c.safety.as_mut().expect("a safety");
            if r == 2 {
                *s = Safety {
                    verdict: SafetyVerdict::Safe,
                    ..Safety::default()
                };
            } else {
                s.overlaps.granted_twice = 1;
            }
            c.faults[0].recovery_ms = Some([800.0, 1000.0, 3000.0][r as usize - 1]);
            c
        })
        .collect()
}

#[test]
fn repeated_chaos_cells_show_their_rates_in_both_reports_and_the_summary() {
    let mut run = RunView::empty(Path::new(NOWHERE));
    run.cells = repeated_chaos_cells();
    let ids: Vec<&str> = sections(&run).iter().map(Section::id).collect();
    assert_eq!(ids[..3], ["comparison", "repetitions", "rates"]);
    // 2 of 3: 21–94 % (worked out in src/stats/rates_tests.rs); the median of 800, 1 000 and
    // 3 000 ms is 1 000.
    let row = "| etcd-predecessor-w-kill-c3 | safe | 3 | unsafe in 2 of 3 (95 % interval 21–94 %) \
               | 0 | granted twice 2 of 3 (21–94 %; 2 in all) | median 1.00 s, range 0.80–3.00 s \
               over 3 of 3 windows |";
    let md = markdown::render(&run);
    assert!(md.contains("\n## Rates\n"), "{md}");
    assert!(md.contains(row), "{md}");
    let page = html::page(&run);
    assert!(page.contains("<section id=\"rates\">"), "{page}");
    assert!(
        page.contains("<td>unsafe in 2 of 3 (95 % interval 21–94 %)</td>"),
        "{page}"
    );
    let files = super::Exporter::run_files(&super::json::Json, &run).expect("summary.json");
    let summary: serde_json::Value = serde_json::from_slice(&files[0].bytes).expect("JSON");
    let rates = &summary["repeated"][0]["rates"];
    assert_eq!(rates["unsafe_rate"]["k"], 2);
    assert_eq!(rates["classes"]["granted_twice"]["n"], 3);
    assert_eq!(rates["recovery"]["median_ms"], 1000.0);

    // Calm cells repeated, or a chaos cell run once: no rates section.
    let mut calm = run.clone();
    for c in &mut calm.cells {
        c.id.chaos = crate::plan::NO_CHAOS.into();
    }
    assert!(!sections(&calm).iter().any(|s| s.id() == "rates"));
    run.cells.truncate(1);
    assert!(!sections(&run).iter().any(|s| s.id() == "rates"));
}
