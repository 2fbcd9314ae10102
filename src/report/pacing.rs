//! Did the harness pace the clients as the workload asked? Each cell's measured hold and think
//! p50 beside the asked p50: a cell off by more than [`tolerance_us`] is listed in the reports
//! and named on the terminal. The figures stay true either way (every latency is measured as it
//! happened); what is off is the load: on a busy machine the clients' timers fire late, holds
//! and thinks run long, and the lock is offered less often than the workload says.

use super::table::{Table, ms, number, text};
use crate::results::{CellSummary, LatencySummary};

/// Below this, a difference between an asked and a measured p50 is the timer's own grain and
/// the recording around it (a closed-loop client records an outcome, then sleeps).
pub const PACE_FLOOR_US: u64 = 250;

/// How far a measured p50 may be from the asked one: a tenth of the asked, at least
/// [`PACE_FLOOR_US`].
pub fn tolerance_us(asked_us: u64) -> u64 {
    (asked_us / 10).max(PACE_FLOOR_US)
}

/// One paced figure of a cell that is off: what, asked p50, measured p50 (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffPace {
    /// `hold` or `think`.
    pub what: &'static str,
    /// The asked p50.
    pub asked_us: u64,
    /// The measured p50.
    pub measured_us: u64,
}

/// The paced figures of `c` whose measured p50 is off the asked p50 by more than the
/// tolerance; none for a figure the cell has no samples of.
pub fn off_pace(c: &CellSummary) -> Vec<OffPace> {
    let figure = |what, asked: &LatencySummary, measured: &LatencySummary| {
        if asked.count == 0 || measured.count == 0 {
            return None;
        }
        let (a, m) = (asked.p50, measured.p50);
        (a.abs_diff(m) > tolerance_us(a)).then_some(OffPace {
            what,
            asked_us: a,
            measured_us: m,
        })
    };
    [
        figure("hold", &c.hold_requested_us, &c.hold_time_us),
        figure("think", &c.think_requested_us, &c.think_time_us),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What the pacing table shows, in both reports.
pub const PACING_TEXT: &str = "Cells whose clients were not paced as the workload asked: a \
     measured hold or think p50 off the asked p50 by more than a tenth of it or 250 µs, \
     whichever is more. Every latency is still the measured one; what is off is the load: \
     holds and thinks that run long offer the lock less often than the workload says. On a \
     busy machine the clients' timers fire late, and a herd is busy by itself: every release \
     wakes every waiter, whose requests take the cores the holder's timer needs. Fewer \
     clients, a release build or a quieter machine bring it back.";

/// One row per off figure of each cell; `None` when every cell was paced as asked.
pub fn table(cells: &[CellSummary]) -> Option<Table> {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .flat_map(|c| {
            off_pace(c).into_iter().map(|o| {
                vec![
                    c.id.to_string(),
                    o.what.to_string(),
                    ms(o.asked_us),
                    ms(o.measured_us),
                    format!(
                        "{:+.2}",
                        (o.measured_us as f64 - o.asked_us as f64) / 1000.0
                    ),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let columns = vec![
        text("cell"),
        text("figure"),
        number("asked p50 ms"),
        number("measured p50 ms"),
        number("off by ms"),
    ];
    Some(Table { columns, rows })
}

/// One line per off cell for the terminal, after the comparison table.
pub fn lines(cells: &[CellSummary]) -> Vec<String> {
    cells
        .iter()
        .filter_map(|c| {
            let off = off_pace(c);
            if off.is_empty() {
                return None;
            }
            let figures: Vec<String> = off
                .iter()
                .map(|o| {
                    format!(
                        "{} p50 {} ms asked, {} ms measured",
                        o.what,
                        ms(o.asked_us),
                        ms(o.measured_us)
                    )
                })
                .collect();
            Some(format!(
                "pacing: {} not paced as asked ({}): its figures are as measured, under a load \
                 other than the workload's (report.md, Pacing)",
                c.id,
                figures.join("; ")
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(p50: u64) -> LatencySummary {
        LatencySummary {
            count: 100,
            p50,
            ..Default::default()
        }
    }

    fn cell(hold: (u64, u64), think: (u64, u64)) -> CellSummary {
        let mut c = crate::capacity::report::tests::cell(16, 100.0, 5_000, 100);
        c.hold_requested_us = summary(hold.0);
        c.hold_time_us = summary(hold.1);
        c.think_requested_us = summary(think.0);
        c.think_time_us = summary(think.1);
        c
    }

    #[test]
    fn the_tolerance_is_a_tenth_and_at_least_the_floor() {
        assert_eq!(tolerance_us(0), 250);
        assert_eq!(tolerance_us(2_000), 250);
        assert_eq!(tolerance_us(2_500), 250);
        assert_eq!(tolerance_us(3_000), 300);
        assert_eq!(tolerance_us(100_000), 10_000);
    }

    #[test]
    fn a_cell_paced_within_the_tolerance_is_not_listed() {
        // A 3 ms hold held 3.3 ms (the edge), a zero think measured 250 µs (the floor).
        let c = cell((3_000, 3_300), (0, 250));
        assert!(off_pace(&c).is_empty());
        assert_eq!(table(std::slice::from_ref(&c)), None);
        assert!(lines(&[c]).is_empty());
    }

    #[test]
    fn a_late_hold_and_a_short_think_are_listed_with_their_numbers() {
        let c = cell((3_000, 3_301), (2_000, 1_700));
        assert_eq!(
            off_pace(&c),
            vec![
                OffPace {
                    what: "hold",
                    asked_us: 3_000,
                    measured_us: 3_301
                },
                OffPace {
                    what: "think",
                    asked_us: 2_000,
                    measured_us: 1_700
                },
            ]
        );
        let t = table(std::slice::from_ref(&c)).expect("a table");
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][1..], ["hold", "3.00", "3.30", "+0.30"]);
        assert_eq!(t.rows[1][1..], ["think", "2.00", "1.70", "-0.30"]);
        let l = lines(&[c]);
        assert_eq!(l.len(), 1);
        assert!(
            l[0].contains("hold p50 3.00 ms asked, 3.30 ms measured")
                && l[0].contains("think p50 2.00 ms asked, 1.70 ms measured"),
            "{}",
            l[0]
        );
    }

    #[test]
    fn a_figure_without_samples_is_not_judged() {
        // An open-loop cell asks no think; a cell that granted nothing held nothing.
        let mut c = cell((3_000, 9_000), (0, 9_000));
        c.think_requested_us.count = 0;
        c.hold_time_us.count = 0;
        assert!(off_pace(&c).is_empty());
    }
}
