//! Two report sections that exist only for some runs, as plain text before any markup (like
//! [`super::table`]): each cell over its repetitions (`--repeat`), and the capacity report of a
//! `lockbench capacity` run (`capacity.json`).

use std::path::Path;

use super::table::{Table, number, text};
use crate::gate::{Metric, Spread, aggregate};
use crate::results::CellSummary;

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

/// The capacity report in `dir`'s `capacity.json`, as a table of the measured points beside
/// the fitted law's prediction, and the summary lines `lockbench capacity` prints; `None`
/// when the run has no (readable) capacity report.
pub fn capacity(dir: &Path) -> Option<(Table, Vec<String>)> {
    let c = crate::capacity::file::read(dir).ok().flatten()?;
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
    Some((
        Table { columns, rows },
        crate::capacity::sweep::summary_lines(&c),
    ))
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
