//! `report.md`: the run's [`sections`] in Markdown (this file only formats each kind): the
//! comparison table, one row per finished cell, the safety findings, the figures of each fault
//! window, and the cells not run.

use super::model::RunView;
use super::sections::{Section, sections};
use super::table::{self, Table};
use super::writer::OutFile;
use super::{ExportError, Exporter};
use crate::check::faults::CLOCK_MODEL;
use crate::results::CellSummary;

/// The file name in the run folder.
pub const REPORT_FILE: &str = "report.md";

/// The Markdown exporter.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn run_files(&self, run: &RunView) -> Result<Vec<OutFile>, ExportError> {
        Ok(vec![OutFile::new(run.dir.join(REPORT_FILE), render(run))])
    }
}

/// The whole of `report.md` for `run`: a title, then each of its [`sections`].
pub fn render(run: &RunView) -> String {
    let mut md = String::from("# lockbench report\n\n");
    for s in sections(run) {
        md.push_str(&section(run, &s));
    }
    md
}

/// One section of `run` in Markdown; empty for a section this format leaves out (the plan,
/// which `plan.toml` beside the report holds) or that has nothing to say.
pub fn section(run: &RunView, s: &Section) -> String {
    match s {
        Section::Findings(f) => findings_section(f),
        Section::Comparison => comparison_table(&run.cells),
        Section::Repetitions(t) => repetitions_section(t),
        Section::Rates(t) => titled("Rates", super::rates::RATES_TEXT, t),
        Section::Versions(t) => titled("Versions", super::versions::VERSIONS_TEXT, t),
        Section::Libraries(t) => titled("Libraries", super::libraries::LIBRARIES_TEXT, t),
        Section::Reentry(t) => titled("Re-entries", REENTRY_TEXT, t),
        Section::RwLock(t) => titled("Read-write lock", RWLOCK_TEXT, t),
        Section::Semaphore(t) => titled("Semaphore", SEMAPHORE_TEXT, t),
        Section::Pacing(t) => titled("Pacing", super::pacing::PACING_TEXT, t),
        Section::Capacity { table, lines } => capacity_section(table, lines),
        Section::Safety => safety_section(&run.cells),
        Section::Faults => faults_section(&run.cells),
        Section::NotRun => not_run_section(run.interrupted, &run.not_run, &run.failed),
        Section::Plots => plots_section(&run.plots.index),
        Section::Plan => String::new(),
        Section::Environment => environment_section(&run.environment),
    }
}

/// What the figures say: the method, then per system its summary and one line per metric.
fn findings_section(f: &super::findings::Findings) -> String {
    let mut s = format!("\n## Findings\n\n{}\n\n", f.method);
    for x in &f.findings {
        s.push_str(&format!("- **{}**: {}.\n", x.subject, x.summary));
        for d in &x.details {
            s.push_str(&format!("  - {d}\n"));
        }
    }
    // A blank line ends the list: the comparison table after it is no part of its last item.
    s.push('\n');
    s
}

/// Each cell over its repetitions (`--repeat`).
fn repetitions_section(t: &Table) -> String {
    format!(
        "\n## Repetitions\n\nEach cell over its repetitions (run in rounds, each on fresh clusters): the median and \
         the interquartile range, which `lockbench gate` reads.\n\n{}",
        markdown_table(t)
    )
}

/// What the re-entry table shows, in both reports.
pub(super) const REENTRY_TEXT: &str = "A reentrant lock's holder takes the key again without a \
     request (the count is the client's): each cell's re-entries beside its outer acquisitions, \
     which the other tables count alone.";

/// A section of a title, a line saying what its table shows, and the table.
fn titled(title: &str, what: &str, t: &Table) -> String {
    format!("\n## {title}\n\n{what}\n\n{}", markdown_table(t))
}

/// What the read-write lock table shows, in both reports.
pub(super) const RWLOCK_TEXT: &str = "Each read-write lock cell's readers beside its writers \
     (an acquisition without a mode counts as a writer): acquisitions per second and acquire \
     latency, the longest writer wait of any outcome (writer starvation: a writer that timed \
     out waited its whole timeout), and the readers holding one key at once (time-weighted \
     mean, most).";

/// What the semaphore table shows, in both reports.
pub(super) const SEMAPHORE_TEXT: &str = "Each semaphore cell's permits, its utilisation (holders \
     of one key, time-weighted over the measured window, ÷ permits), the most holders at once \
     (above the permits is a violation) and wake-ups per grant (n/a where the client cannot \
     see them).";

/// The capacity report (`capacity.json`): its summary lines, then its table.
fn capacity_section(t: &Table, lines: &[String]) -> String {
    let mut s = String::from("\n## Capacity\n\n");
    for l in lines {
        s.push_str(&format!("- {l}\n"));
    }
    s.push('\n');
    s.push_str(&markdown_table(t));
    s
}

/// Whether the run was interrupted, the cells it did not run, and why each that failed did.
fn not_run_section(
    interrupted: bool,
    not_run: &[String],
    failed: &[crate::results::FailedCell],
) -> String {
    let mut out = format!(
        "\n{}Cells not run: {}\n",
        if interrupted {
            "The run was interrupted. "
        } else {
            ""
        },
        if not_run.is_empty() {
            "none".to_string()
        } else {
            not_run.join(", ")
        }
    );
    if !failed.is_empty() {
        out.push_str(&format!(
            "\nCells that failed ({}; each folder's `{}` has the whole story):\n\n",
            failed.len(),
            crate::results::ERROR_FILE
        ));
        for f in failed {
            out.push_str(&format!("- `{}`: {}\n", f.id, f.reason));
        }
    }
    out
}

/// The plots of `index` (PNG, relative to the run folder): run-level ones shown, each cell's
/// listed as links under its id. Nothing when there are none.
pub fn plots_section(index: &super::plot_index::PlotIndex) -> String {
    use super::plot_index::PLOTS_DIR;
    if index.plots.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n## Plots\n\nSVG beside each PNG; report.html shows them all.\n");
    for p in index.plots.iter().filter(|p| p.cell.is_none()) {
        s.push_str(&format!(
            "\n### {}\n\n![{}]({PLOTS_DIR}/{})\n\n{}\n",
            p.title, p.title, p.png, p.caption
        ));
    }
    let mut cell: Option<&str> = None;
    for p in index.plots.iter().filter(|p| p.cell.is_some()) {
        let id = p.cell.as_deref().unwrap_or_default();
        if cell != Some(id) {
            s.push_str(&format!("\n### {id}\n\n"));
            cell = Some(id);
        }
        s.push_str(&format!(
            "- [{}]({PLOTS_DIR}/{}): {}\n",
            p.kind, p.png, p.caption
        ));
    }
    s
}

/// A table in Markdown: numeric columns right-aligned.
pub fn markdown_table(t: &Table) -> String {
    let line = |cells: Vec<&str>| format!("| {} |\n", cells.join(" | "));
    let mut s = line(t.columns.iter().map(|c| c.name).collect());
    s.push_str(&format!(
        "|{}|\n",
        t.columns
            .iter()
            .map(|c| if c.numeric { "---:" } else { "---" })
            .collect::<Vec<_>>()
            .join("|")
    ));
    for row in &t.rows {
        s.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    s
}

/// A Markdown table with one row per cell, in the order given. A `chaos` column follows the
/// workload when some cell ran under a chaos schedule (runs without chaos keep their table).
pub fn comparison_table(cells: &[CellSummary]) -> String {
    markdown_table(&table::comparison(cells))
}

/// Every cell that is not plainly safe: its counts and its first findings, each with the
/// `history.jsonl` lines to read.
pub fn safety_section(cells: &[CellSummary]) -> String {
    let mut s = String::new();
    for f in table::safety_findings(cells) {
        if s.is_empty() {
            s.push_str("\n## Safety\n");
        }
        s.push_str(&format!(
            "\n### {} — {}\n\n{}.\n",
            f.cell.id, f.verdict, f.counts
        ));
        for v in &f.findings {
            let lines: Vec<String> = v.lines.iter().map(usize::to_string).collect();
            s.push_str(&format!(
                "- {}: {} (`cells/{}/history.jsonl` lines {})\n",
                v.source,
                v.what,
                f.cell.id,
                lines.join(", ")
            ));
        }
    }
    s
}

/// Per cell with fault windows, a table with one row per window: when it ran, how fast the
/// lock came back, and what the checkers found over its attribution span. Empty when no cell
/// has a fault window.
pub fn faults_section(cells: &[CellSummary]) -> String {
    let mut s = String::new();
    for c in cells.iter().filter(|c| !c.faults.is_empty()) {
        if s.is_empty() {
            s.push_str(&format!(
                "\n## Faults\n\nEach nemesis fault window, with the findings, lost leases and errors from its start to its heal + a settle of 2 × the longest lease (at least 1 s), or to the end of the history if it was not healed; applying ms is the time from asking for the fault to its effect, and acquisitions and the first grant count from the effect. The clock fault is {CLOCK_MODEL} (see `docs/book/src/results-schema.md`, `faults`).\n",
            ));
        }
        let (t, notes) = table::faults(c);
        s.push_str(&format!("\n### {}\n\n{}", c.id, markdown_table(&t)));
        if !notes.is_empty() {
            s.push('\n');
            for n in notes {
                s.push_str(&format!("- {n}\n"));
            }
        }
    }
    s
}

/// Where the run ran: the machine and build (`environment.json`) and each cluster
/// (`clusters/*.json`), "not recorded" in folders from before these files.
pub fn environment_section(env: &crate::environment::RunEnvironment) -> String {
    let mut s = String::from("\n## Environment\n\n");
    for (label, value) in env.machine_rows() {
        s.push_str(&format!("- {label}: {value}\n"));
    }
    if env.clusters.is_empty() {
        s.push_str("- clusters: not recorded\n");
    } else {
        s.push_str(
            "\n| cluster file | system | nodes | server version | leader | start s | settings |\n|---|---|---:|---|---|---:|---|\n",
        );
        for c in &env.clusters {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                c.file,
                c.system,
                c.size(),
                c.server_version,
                c.leader,
                c.start_seconds
                    .map_or_else(|| "n/a".to_string(), |x| format!("{x:.1}")),
                c.settings_mode()
            ));
        }
        s.push_str(&settings_table(env));
    }
    for p in &env.problems {
        s.push_str(&format!("\n{p}\n"));
    }
    s
}

/// The server settings each cluster ran with that differed from the packages' defaults, one
/// row a setting; empty when no cluster recorded any.
fn settings_table(env: &crate::environment::RunEnvironment) -> String {
    let rows: Vec<String> = env
        .clusters
        .iter()
        .flat_map(|c| {
            c.setting_rows()
                .into_iter()
                .map(move |[node, name, value, default]| {
                    format!("| {} | {node} | `{name}` | {value} | {default} |\n", c.file)
                })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nServer settings that differed from the packages' defaults (the guide's systems \
         chapter says why each):\n\n| cluster file | node | setting | value | package default |\n\
         |---|---|---|---|---|\n",
    );
    s.extend(rows);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Event, EventKind, Op};
    use crate::results::CellInfo;
    use crate::stats::analyze_events as analyze;

    #[test]
    fn invisible_wakeups_show_as_not_available() {
        // etcd's server-side Lock: outcomes carry requests but no wake-up count.
        let mut ok = Event::new(100, 0, EventKind::Ok, Op::Acquire, "k");
        (ok.requests, ok.fallback_polls) = (Some(2), Some(0));
        let events = [Event::new(0, 0, EventKind::Invoke, Op::Acquire, "k"), ok];
        let s = analyze(&events, &crate::results::testkit::cell(1)).summary;
        assert_eq!(s.wakeups_per_acquisition, None);
        let table = comparison_table(&[s]);
        assert!(table.contains("| n/a |"), "{table}");
    }

    #[test]
    fn the_faults_section_has_a_row_per_window_and_only_with_windows() {
        use crate::results::{FaultWindow, SafetyVerdict};
        let cell = CellInfo {
            server_version: None,
            server_settings: None,
            id: crate::plan::CellId::new(
                crate::system::System::Etcd,
                crate::recipe::Strategy::Herd,
                "w",
                2,
            ),
            warmup: std::time::Duration::ZERO,
            end_us: Some(10_000_000),
            resource: Default::default(),
            expect: Default::default(),
            settle_ms: None,
            lock: Default::default(),
        };
        let calm = analyze(&[], &cell).summary;
        assert_eq!(faults_section(std::slice::from_ref(&calm)), "");

        let window = |kind: &str, start_us, end_us| FaultWindow {
            kind: kind.into(),
            targets: vec!["n1".into(), "n2".into()],
            start_us,
            effect_us: None,
            undo_us: None,
            applying_ms: None,
            undoing_ms: None,
            effect: None,
            end_us,
            started: true,
            error: None,
            first_grant_ms: None,
            recovery_ms: None,
            recovery_cluster_ms: None,
            recovery_clients_ms: None,
            requests_per_client_s: None,
            most_failed_per_client: 0,
            acquisitions: 0,
            verdict: SafetyVerdict::Safe,
            overlaps: 0,
            possible_overlaps: 0,
            lost_updates: 0,
            stale_accesses_rejected: 0,
            token_regressions: 0,
            lost_leases: 0,
            errors: Default::default(),
        };
        let mut chaotic = calm.clone();
        chaotic.id.chaos = "kill-leader".into();
        let mut partition = window("partition", 1_500_000, Some(4_250_000));
        partition.first_grant_ms = Some(250.5);
        partition.applying_ms = Some(20.5);
        partition.recovery_ms = Some(12.25);
        partition.verdict = SafetyVerdict::Unsafe;
        (partition.overlaps, partition.possible_overlaps) = (2, 1);
        (partition.lost_updates, partition.stale_accesses_rejected) = (1, 3);
        partition.lost_leases = 4;
        partition.errors = [("connection".to_string(), 1), ("timeout".to_string(), 5)].into();
        let mut kill = window("kill", 6_000_000, None);
        kill.targets.clear();
        kill.started = false;
        kill.error = Some("start: no leader".into());
        chaotic.faults = vec![partition, kill];

        let md = faults_section(&[calm, chaotic.clone()]);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[1], "## Faults");
        assert_eq!(
            md.matches("### ").count(),
            1,
            "only the cell with windows: {md}"
        );
        assert!(md.contains(&format!("### {}\n", chaotic.id)), "{md}");
        let rows: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with("| "))
            .collect();
        assert_eq!(rows.len(), 3, "{md}");
        assert_eq!(
            rows[1],
            "| partition | n1, n2 | 1.500 | 20.50 | 4.250 | 250.50 | 12.25 | unsafe | 2/1 | 1 | 3 | 4 | connection:1, timeout:5 |"
        );
        assert_eq!(
            rows[2],
            "| kill (did not start) | - | 6.000 | n/a | not healed | n/a | n/a | safe | 0/0 | 0 | 0 | 0 | - |"
        );
        let header_cols = rows[0].matches('|').count();
        assert!(
            rows.iter().all(|r| r.matches('|').count() == header_cols),
            "{md}"
        );
        assert!(
            md.ends_with("- kill at 6.000 s: start: no leader\n"),
            "{md}"
        );
    }

    #[test]
    fn rows_show_hold_asked_and_held_and_the_fifo_basis() {
        let mut release = Event::new(1_300, 0, EventKind::Invoke, Op::Release, "k");
        release.hold_us = Some(1_000);
        let mut granted = Event::new(100, 0, EventKind::Ok, Op::Acquire, "k");
        granted.queue_position = Some(7);
        let events = [
            Event::new(0, 0, EventKind::Invoke, Op::Acquire, "k"),
            granted,
            release,
        ];
        let cell = CellInfo {
            server_version: None,
            server_settings: None,
            id: crate::plan::CellId::new(
                crate::system::System::Zookeeper,
                crate::recipe::Strategy::Predecessor,
                "w",
                1,
            ),
            warmup: std::time::Duration::ZERO,
            end_us: None,
            resource: Default::default(),
            expect: Default::default(),
            settle_ms: None,
            lock: Default::default(),
        };
        let table = comparison_table(&[analyze(&events, &cell).summary]);
        let row = table.lines().nth(2).unwrap();
        // Held 1300 − 100 = 1200 µs for 1000 asked; one grant, by queue position.
        assert!(row.contains("| 1.00/1.20 |"), "{row}");
        assert!(row.contains("| 0 (queue) |"), "{row}");
        let header_cols = table.lines().next().unwrap().matches('|').count();
        assert_eq!(row.matches('|').count(), header_cols, "{table}");
        assert!(
            !table.contains("chaos"),
            "no chaos column without chaos: {table}"
        );

        // With a chaos cell, every row says its schedule, and the columns still line up.
        let calm = analyze(&events, &cell).summary;
        let mut chaotic = calm.clone();
        chaotic.id.chaos = "kill-leader".into();
        let table = comparison_table(&[calm, chaotic]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("| system | strategy | workload | chaos | clients |"));
        assert!(
            lines[2].starts_with("| zookeeper | predecessor | w | none | 1 |"),
            "{table}"
        );
        assert!(
            lines[3].starts_with("| zookeeper | predecessor | w | kill-leader | 1 |"),
            "{table}"
        );
        for l in &lines {
            assert_eq!(l.matches('|').count(), header_cols + 1, "{table}");
        }
    }
}

#[cfg(test)]
mod plot_tests {
    use super::*;
    use crate::report::plot_index::{PlotEntry, PlotIndex};

    fn entry(kind: &str, cell: Option<&str>) -> PlotEntry {
        let stem = cell.map_or(kind.to_string(), |c| format!("{c}.{kind}"));
        PlotEntry {
            kind: kind.into(),
            title: format!("T {kind}"),
            caption: "how to read it".into(),
            svg: format!("{stem}.svg"),
            png: format!("{stem}.png"),
            cell: cell.map(str::to_string),
        }
    }

    #[test]
    fn run_plots_are_shown_and_cell_plots_linked_under_their_cell() {
        assert_eq!(plots_section(&PlotIndex::default()), "");
        let index = PlotIndex {
            plots: vec![
                entry("latency-distribution", None),
                entry("safety-timeline", Some("etcd-herd-w-c4")),
                entry("fairness", Some("etcd-herd-w-c4")),
            ],
        };
        let md = plots_section(&index);
        assert!(md.contains("![T latency-distribution](plots/latency-distribution.png)"));
        assert_eq!(md.matches("### etcd-herd-w-c4").count(), 1);
        assert!(md.contains("- [safety-timeline](plots/etcd-herd-w-c4.safety-timeline.png)"));
    }
}
