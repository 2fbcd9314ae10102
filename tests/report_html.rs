//! report.html and `lockbench report DIR` without Docker, on a mock run folder: every file is
//! produced, the page is well-formed and self-contained, every plot of plots/index.json is
//! inline, the verb rebuilds the same page, and empty or old folders still report.

mod report_support;

use std::ffi::OsStr;
use std::path::Path;

use base64::Engine as _;
use lockbench::report::plot_index::PLOTS_DIR;
use lockbench::report::plot_index::{PlotIndex, shows_svg};
use lockbench::runner::RunOutcome;
use report_support::{attribute_values, lockbench, mock_run, scratch, well_formed};

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// No URL leaves the file: every src is a data: URI, every href an anchor of the page.
fn assert_self_contained(html: &str) {
    for bad in [
        "http:",
        "https:",
        "url(",
        "src=\"//",
        "href=\"//",
        "<link",
        "@import",
    ] {
        assert!(!html.contains(bad), "the page references {bad:?}");
    }
    for src in attribute_values(html, "src") {
        assert!(src.starts_with("data:image/"), "src {src:.60}");
    }
    let ids = attribute_values(html, "id");
    for href in attribute_values(html, "href") {
        let target = href
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("href {href} is not an anchor"));
        assert!(ids.contains(&target), "href {href} points at no element");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mock_run_has_a_self_contained_report_that_report_dir_rebuilds() {
    let out = scratch("html");
    let outcome = mock_run(&out).await;
    let run = outcome.folder.clone();
    let ids: Vec<String> = outcome.summaries.iter().map(|s| s.id.to_string()).collect();
    assert_eq!(
        ids,
        ["redis-herd-report-hot-c6", "redis-herd-report-hot-kill-c6"]
    );
    assert_files_and_verdicts(&run, &outcome);
    // As the run wrote it.
    let html = read(&run.join("report.html"));
    assert_page(&html, &ids, &outcome);
    assert_environment(&run, &html);
    let index = assert_plots_inline(&run, &html, &ids);
    // Rebuilt from nothing but the stored results (the plots drawn again too), the pages are
    // the same.
    assert_rebuilt_the_same(&run, html, &index);
    // An older folder: no environment.json, no run summary.
    assert_old_folder_reports(&run);
    let _ = std::fs::remove_dir_all(&out);
}

/// Every file of the run folder is there, and both cells' planted overlaps were found.
fn assert_files_and_verdicts(run: &Path, outcome: &RunOutcome) {
    for f in [
        "plan.toml",
        "environment.json",
        "summary.json",
        "report.md",
        "report.html",
    ] {
        assert!(run.join(f).is_file(), "{f} missing");
    }
    for s in &outcome.summaries {
        let safety = s.safety.as_ref().expect("verdict");
        assert_eq!(
            safety.verdict,
            lockbench::check::SafetyVerdict::Unsafe,
            "{}: planted overlaps not found",
            s.id
        );
    }
}

/// The page is well-formed and self-contained, with a row, a finding (its history lines as
/// the summary has them) and a safety article per cell, and the kill cell's fault windows.
fn assert_page(html: &str, ids: &[String], outcome: &RunOutcome) {
    let tags = well_formed(html).unwrap_or_else(|e| panic!("{e}"));
    for t in [
        "html", "table", "section", "article", "figure", "img", "script", "style",
    ] {
        assert!(tags.iter().any(|x| x == t), "no <{t}>");
    }
    assert_self_contained(html);
    assert_eq!(html.matches("<tr data-cell=").count(), 2);
    assert_eq!(
        html.matches("<a class=\"broken\" href=\"#safety-").count(),
        2
    );
    for id in ids {
        assert!(
            html.contains(&format!("<article id=\"safety-{id}\"")),
            "{id}"
        );
    }
    // The first finding of each cell, with its history lines, as the summary has it.
    for s in &outcome.summaries {
        let v = &s.safety.as_ref().unwrap().violations[0];
        let lines: Vec<String> = v.lines.iter().map(usize::to_string).collect();
        let line = format!(
            "<code>cells/{}/history.jsonl</code> lines {}",
            s.id,
            lines.join(", ")
        );
        assert!(html.contains(&line), "{line}");
    }
    assert!(html.contains("<h3 id=\"faults-redis-herd-report-hot-kill-c6\">"));
    assert_eq!(
        html.matches("<h3 id=\"faults-").count(),
        1,
        "only the kill cell has fault windows"
    );
    assert!(
        html.contains("<td>kill</td><td>mock1</td>"),
        "the kill window's row"
    );
    assert!(html.contains("<h3>Chaos schedule <code>kill</code></h3>"));
    assert!(html.contains("<h3>Workload <code>report-hot</code></h3>"));
}

/// The environment the run recorded as it started, in both reports.
fn assert_environment(run: &Path, html: &str) {
    let env: lockbench::environment::Environment =
        serde_json::from_str(&read(&run.join(lockbench::environment::ENVIRONMENT_FILE)))
            .expect("environment.json");
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(env.cores, Some(cores));
    for row in [
        format!(
            "<tr><th>lockbench</th><td>{}</td></tr>",
            env!("CARGO_PKG_VERSION")
        ),
        format!("<tr><th>git commit</th><td>{}</td></tr>", env.git_commit),
        format!("<tr><th>cores</th><td>{cores}</td></tr>"),
        "<tr><th>Docker engine</th><td>none (in-memory clusters, no Docker)</td></tr>".into(),
    ] {
        assert!(html.contains(&row), "{row}");
    }
    assert!(read(&run.join("report.md")).contains(&format!("- cores: {cores}\n")));
}

/// Every plot of plots/index.json is inline, as its SVG or its PNG as `shows_svg` says: 4
/// run-level ones (latency distribution; wake-ups, handoff and throughput against clients) and
/// 3 per cell; returns the index.
fn assert_plots_inline(run: &Path, html: &str, ids: &[String]) -> PlotIndex {
    let index = PlotIndex::read(run).expect("plots/index.json");
    assert_eq!(index.plots.len(), 4 + 3 * ids.len(), "{index:?}");
    assert_eq!(html.matches("<figure ").count(), index.plots.len());
    for p in &index.plots {
        let svg = std::fs::read(run.join(PLOTS_DIR).join(&p.svg)).unwrap();
        let png = std::fs::read(run.join(PLOTS_DIR).join(&p.png)).unwrap();
        let (mime, shown) = if shows_svg(svg.len(), Some(png.len())) {
            ("image/svg+xml", svg)
        } else {
            ("image/png", png)
        };
        let uri = format!(
            "data:{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(shown)
        );
        let at = html
            .find(&format!("<figure id=\"{}\"", p.anchor()))
            .unwrap_or_else(|| panic!("no figure {}", p.anchor()));
        let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
        assert!(figure.contains(&format!("src=\"{uri}\"")), "{}", p.anchor());
    }
    // The mock's cells are busy: their latency over time is a PNG, fairness an SVG.
    for mime in ["image/png", "image/svg+xml"] {
        assert!(html.contains(&format!("data:{mime};base64,")), "no {mime}");
    }
    for id in ids {
        assert!(
            html.contains(&format!("<a href=\"#safety-timeline-{id}\">")),
            "the findings of {id} link to its timeline"
        );
    }
    index
}

/// `lockbench report` rebuilds the reports and the plots, the same as the run wrote them.
fn assert_rebuilt_the_same(run: &Path, html: String, index: &PlotIndex) {
    let (md, page) = (read(&run.join("report.md")), html);
    std::fs::remove_file(run.join("report.md")).unwrap();
    std::fs::remove_file(run.join("report.html")).unwrap();
    std::fs::remove_dir_all(run.join(PLOTS_DIR)).unwrap();
    let res = lockbench(&[OsStr::new("report"), run.as_os_str()]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    assert!(
        String::from_utf8_lossy(&res.stdout).starts_with("2 cells: "),
        "{:?}",
        res.stdout
    );
    assert_eq!(&PlotIndex::read(run).unwrap(), index);
    assert_eq!(read(&run.join("report.md")), md);
    assert_eq!(read(&run.join("report.html")), page);
}

/// A folder without environment.json and the run summary still reports.
fn assert_old_folder_reports(run: &Path) {
    std::fs::remove_file(run.join(lockbench::environment::ENVIRONMENT_FILE)).unwrap();
    std::fs::remove_file(run.join("summary.json")).unwrap();
    let res = lockbench(&[OsStr::new("report"), run.as_os_str()]);
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let html = read(&run.join("report.html"));
    well_formed(&html).unwrap_or_else(|e| panic!("{e}"));
    assert!(html.contains("<tr><th>environment</th><td>not recorded</td></tr>"));
    assert!(read(&run.join("report.md")).contains("not recorded"));
}

#[test]
fn report_dir_says_what_is_wrong_with_a_folder_and_reports_an_empty_run() {
    let out = scratch("folders");
    let missing = out.join("nope");
    let res = lockbench(&[OsStr::new("report"), missing.as_os_str()]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("no such folder; pass a run folder"),
        "{stderr}"
    );

    let res = lockbench(&[OsStr::new("report"), out.as_os_str()]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a lockbench run folder"), "{stderr}");

    let cell = out.join("cells/x-c1");
    std::fs::create_dir_all(&cell).unwrap();
    std::fs::write(cell.join("cell.json"), "{}").unwrap();
    let res = lockbench(&[OsStr::new("report"), cell.as_os_str()]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("one cell's folder"), "{stderr}");

    // A run that stopped before its first cell finished: cells/ has only an unfinished cell.
    let res = lockbench(&[OsStr::new("report"), out.as_os_str()]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("1 cell folder(s) without summary.json"),
        "{stderr}"
    );
    let html = read(&out.join("report.html"));
    well_formed(&html).unwrap_or_else(|e| panic!("{e}"));
    assert_self_contained(&html);
    assert!(html.contains("0 cells finished"));
    assert!(html.contains("No cell has finished yet."));
    assert!(read(&out.join("report.md")).starts_with("# lockbench report"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_well_formedness_check_can_fail() {
    assert!(well_formed("<p><b>x</p></b>").is_err());
    assert!(well_formed("<div><p>x</p>").is_err());
    assert!(well_formed("<p a=\"x>y</p>").is_err());
    assert!(well_formed("<p>1 < 2</p>").is_err());
    assert_eq!(
        well_formed("<!DOCTYPE html><p>a<br><img src=\"x\"></p><script>if(a<b){}</script>")
            .unwrap(),
        ["p", "br", "img", "script"]
    );
}
