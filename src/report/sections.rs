//! The reports' sections: [`sections`] decides which exist and in which order, once for
//! both formats; `markdown.rs` and `html.rs` only format each [`Section`] kind. Also the
//! content of the two sections that exist only for some runs, as plain tables before any
//! markup (like [`super::table`]): each cell over its repetitions (`--repeat`), and the
//! capacity report of a `lockbench capacity` run (`capacity.json`).

use super::model::RunView;
use super::table::{Table, number, text};
use crate::capacity::Capacity;
use crate::gate::{Metric, Spread, aggregate};
use crate::results::CellSummary;

/// One section of a report, in the order [`sections`] gives. A format may show a section as
/// nothing (Markdown leaves the plan to `plan.toml`; HTML says the cells not run in its header)
/// but never moves one.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// What the figures say in words: which strategy wins where, and by how much
    /// ([`super::findings`]).
    Findings(super::findings::Findings),
    /// The comparison table, one row per finished cell.
    Comparison,
    /// Each cell over its repetitions (`--repeat`).
    Repetitions(Table),
    /// Each repeated chaos cell's verdicts as rates ([`super::rates`]).
    Rates(Table),
    /// A system's server versions side by side ([`super::versions`]).
    Versions(Table),
    /// What each library cell's driver recorded ([`super::libraries`]).
    Libraries(Table),
    /// What re-entries cost, per reentrant cell.
    Reentry(Table),
    /// Readers and writers apart, per read-write lock cell ([`super::kind_tables::rwlock`]).
    RwLock(Table),
    /// Occupancy, per semaphore cell ([`super::kind_tables::semaphore`]).
    Semaphore(Table),
    /// The capacity report: its table and the summary lines `lockbench capacity` prints.
    Capacity {
        /// Measured points beside the fitted law's prediction.
        table: Table,
        /// The summary lines.
        lines: Vec<String>,
    },
    /// The cells whose clients were not paced as the workload asked ([`super::pacing`]).
    Pacing(Table),
    /// The safety verdicts and each unsafe cell's first findings.
    Safety,
    /// The fault windows of each cell that had some.
    Faults,
    /// The run was interrupted or left cells out.
    NotRun,
    /// The plots of `plots/index.json`.
    Plots,
    /// The plan the run followed.
    Plan,
    /// Where the run ran.
    Environment,
}

impl Section {
    /// A short name, the same in both formats (the HTML section's id).
    pub fn id(&self) -> &'static str {
        match self {
            Section::Findings(_) => "findings",
            Section::Comparison => "comparison",
            Section::Repetitions(_) => "repetitions",
            Section::Rates(_) => "rates",
            Section::Versions(_) => "versions",
            Section::Libraries(_) => "libraries",
            Section::Reentry(_) => "reentry",
            Section::RwLock(_) => "rwlock",
            Section::Semaphore(_) => "semaphore",
            Section::Pacing(_) => "pacing",
            Section::Capacity { .. } => "capacity",
            Section::Safety => "safety",
            Section::Faults => "faults",
            Section::NotRun => "not-run",
            Section::Plots => "plots",
            Section::Plan => "plan",
            Section::Environment => "environment",
        }
    }
}

/// The sections of `run`'s reports, in order: the ones only some runs have (findings,
/// repetitions, rates, capacity, cells not run) only when the run has them.
pub fn sections(run: &RunView) -> Vec<Section> {
    let mut out: Vec<Section> = super::findings::findings(&run.cells, super::findings::NOISE_BAND)
        .map(Section::Findings)
        .into_iter()
        .collect();
    out.push(Section::Comparison);
    out.extend(repetitions(&run.cells).map(Section::Repetitions));
    out.extend(super::rates::table(&run.cells).map(Section::Rates));
    out.extend(super::versions::table(&run.cells).map(Section::Versions));
    out.extend(super::libraries::table(&run.cells, &run.drivers).map(Section::Libraries));
    out.extend(reentry(&run.cells).map(Section::Reentry));
    out.extend(super::kind_tables::rwlock(&run.cells).map(Section::RwLock));
    out.extend(super::kind_tables::semaphore(&run.cells).map(Section::Semaphore));
    if let Ok(Some(c)) = &run.capacity {
        let (table, lines) = capacity(c);
        out.push(Section::Capacity { table, lines });
    }
    out.extend(super::pacing::table(&run.cells).map(Section::Pacing));
    out.extend([Section::Safety, Section::Faults]);
    if run.interrupted || !run.not_run.is_empty() || !run.failed.is_empty() {
        out.push(Section::NotRun);
    }
    out.extend([Section::Plots, Section::Plan, Section::Environment]);
    out
}

/// Each cell over its repetitions: repetitions, each gated metric's median with its
/// interquartile range, and the verdicts; `None` when the run had no repetitions.
pub fn repetitions(cells: &[CellSummary]) -> Option<Table> {
    if !cells.iter().any(|c| c.id.repetition.is_some()) {
        return None;
    }
    let mut columns = vec![text("cell"), number("runs")];
    columns.extend([
        number("acq/s median [IQR]"),
        number("p99 ms median [IQR]"),
        number("handoff p50 ms median [IQR]"),
        number("wakeups/acq median [IQR]"),
        text("safety"),
    ]);
    let show = |m: Metric, s: Option<&Spread>| match s {
        None => "n/a".to_string(),
        Some(s) => {
            let scale = if m.higher_is_better() || m == Metric::WakeupsPerAcquisition {
                1.0
            } else {
                1000.0
            };
            let d = if m == Metric::Throughput { 1 } else { 2 };
            format!(
                "{:.d$} [{:.d$}–{:.d$}]",
                s.median / scale,
                s.q1 / scale,
                s.q3 / scale
            )
        }
    };
    let rows = aggregate(cells)
        .iter()
        .map(|a| {
            let mut row = vec![a.cell.clone(), a.repetitions.to_string()];
            row.extend(Metric::ALL.map(|m| show(m, a.metric(m))));
            row.push(a.safety.describe());
            row
        })
        .collect();
    Some(Table { columns, rows })
}

/// Each reentrant cell's re-entries beside its outer acquisitions: how many, what they sent to
/// the server, how long one took; `None` when no cell has re-entries.
pub fn reentry(cells: &[CellSummary]) -> Option<Table> {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .filter_map(|c| {
            let r = c.reentry.as_ref()?;
            Some(vec![
                c.id.to_string(),
                c.acquisitions.to_string(),
                r.reentries.to_string(),
                r.refused.to_string(),
                r.requests.to_string(),
                r.latency_us.p50.to_string(),
                r.latency_us.p99.to_string(),
                format!("{:.2}", c.acquire_latency_us.p50 as f64 / 1000.0),
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let columns = vec![
        text("cell"),
        number("acquisitions"),
        number("re-entries"),
        number("refused"),
        number("requests"),
        number("re-entry p50 µs"),
        number("re-entry p99 µs"),
        number("acquire p50 ms"),
    ];
    Some(Table { columns, rows })
}

/// The capacity report `c` (a run's `capacity.json`), as a table of the measured points
/// beside the fitted law's prediction, and the summary lines `lockbench capacity` prints.
pub fn capacity(c: &Capacity) -> (Table, Vec<String>) {
    let fit = c.fitted();
    let columns = vec![
        number("clients"),
        number("acq/s measured"),
        number("acq/s USL"),
        number("p99 ms"),
        number("acquisitions"),
    ];
    let rows = c
        .points
        .iter()
        .map(|p| {
            vec![
                p.clients.to_string(),
                format!("{:.1}", p.throughput),
                fit.map_or("n/a".into(), |f| {
                    format!("{:.1}", f.predict(f64::from(p.clients)))
                }),
                format!("{:.2}", p.p99_us as f64 / 1000.0),
                p.acquisitions.to_string(),
            ]
        })
        .collect();
    (
        Table { columns, rows },
        crate::capacity::sweep::summary_lines(c),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetitions_show_medians_and_quartiles_per_cell() {
        let cells: Vec<CellSummary> = [100.0, 90.0, 110.0]
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let mut c =
                    crate::capacity::report::tests::cell(4, x, 20_000 + 1000 * i as u64, 50);
                c.id.repetition = Some(i as u32 + 1);
                c
            })
            .collect();
        let t = repetitions(&cells).expect("a table");
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0][0], "etcd-predecessor-w-c4");
        assert_eq!(t.rows[0][1], "3");
        assert_eq!(t.rows[0][2], "100.0 [95.0–105.0]");
        assert_eq!(t.rows[0][3], "21.00 [20.50–21.50]");
        assert_eq!(t.rows[0][4], "n/a");
        let mut once = cells[0].clone();
        once.id.repetition = None;
        assert!(repetitions(&[once]).is_none());
    }
}
