//! `report.md`: the comparison table, one row per finished cell, and the cells not run.

use super::{ExportError, Exporter, RunReport, write_file};
use crate::stats::{CellSummary, FifoBasis};

/// The file name in the run folder.
pub const REPORT_FILE: &str = "report.md";

/// The Markdown exporter.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn run_updated(&self, run: &RunReport<'_>) -> Result<(), ExportError> {
        let mut md = String::from("# lockbench report\n\n");
        md.push_str(&comparison_table(run.cells));
        if run.interrupted || !run.not_run.is_empty() {
            md.push_str(&format!(
                "\n{}Cells not run: {}\n",
                if run.interrupted {
                    "The run was interrupted. "
                } else {
                    ""
                },
                if run.not_run.is_empty() {
                    "none".to_string()
                } else {
                    run.not_run.join(", ")
                }
            ));
        }
        write_file(self.name(), &run.dir.join(REPORT_FILE), &md)
    }
}

fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

/// An absent figure (a client that cannot see its wake-ups, nothing granted) reads "n/a",
/// never 0.
fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"))
}

/// Hold p50 asked for / as held, so a harness that holds longer than the workload says shows.
fn hold(c: &CellSummary) -> String {
    let asked = if c.hold_requested_us.count == 0 {
        "-".to_string()
    } else {
        ms(c.hold_requested_us.p50)
    };
    format!("{asked}/{}", ms(c.hold_time_us.p50))
}

/// Inversions with their basis: counts judged by invoke time include network races.
fn fifo(c: &CellSummary) -> String {
    let basis = match c.fifo_basis {
        FifoBasis::QueuePosition => "queue",
        FifoBasis::InvokeTime => "invoke",
    };
    format!("{} ({basis})", c.fifo_inversions)
}

/// A Markdown table with one row per cell, in the order given.
pub fn comparison_table(cells: &[CellSummary]) -> String {
    let mut s = String::from(
        "| system | strategy | workload | clients | acq/s | p50 ms | p99 ms | handoff p50 ms | hold p50 ms asked/held | wakeups/acq | requests/acq | FIFO inversions (by) | Jain | timeouts | errors | lost leases |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for c in cells {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.id.system,
            c.id.strategy,
            c.id.workload,
            c.id.clients,
            c.throughput_per_s,
            ms(c.acquire_latency_us.p50),
            ms(c.acquire_latency_us.p99),
            ms(c.handoff_latency_us.p50),
            hold(c),
            opt(c.wakeups_per_acquisition),
            opt(c.requests_per_acquisition),
            fifo(c),
            opt(c.jain_fairness),
            c.timeouts,
            c.errors.values().sum::<u64>(),
            c.lost_leases
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Event, EventKind, Op};
    use crate::stats::{CellInfo, analyze};

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
            id: crate::plan::CellId::new(
                crate::system::System::Zookeeper,
                crate::recipe::Strategy::Predecessor,
                "w",
                1,
            ),
            warmup: std::time::Duration::ZERO,
            end_us: None,
        };
        let table = comparison_table(&[analyze(&events, &cell).summary]);
        let row = table.lines().nth(2).unwrap();
        // Held 1300 − 100 = 1200 µs for 1000 asked; one grant, by queue position.
        assert!(row.contains("| 1.00/1.20 |"), "{row}");
        assert!(row.contains("| 0 (queue) |"), "{row}");
        let header_cols = table.lines().next().unwrap().matches('|').count();
        assert_eq!(row.matches('|').count(), header_cols, "{table}");
    }
}
