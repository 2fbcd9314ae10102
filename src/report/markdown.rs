//! `report.md`: the comparison table, one row per finished cell, and the cells not run.

use super::{ExportError, Exporter, RunReport, write_file};
use crate::stats::CellSummary;

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

/// A Markdown table with one row per cell, in the order given.
pub fn comparison_table(cells: &[CellSummary]) -> String {
    let mut s = String::from(
        "| system | strategy | workload | clients | acq/s | p50 ms | p99 ms | handoff p50 ms | wakeups/acq | requests/acq | FIFO inversions | Jain | timeouts | errors | lost leases |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for c in cells {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.id.system,
            c.id.strategy,
            c.id.workload,
            c.id.clients,
            c.throughput_per_s,
            ms(c.acquire_latency_us.p50),
            ms(c.acquire_latency_us.p99),
            ms(c.handoff_latency_us.p50),
            opt(c.wakeups_per_acquisition),
            opt(c.requests_per_acquisition),
            c.fifo_inversions,
            opt(c.jain_fairness),
            c.timeouts,
            c.errors.values().sum::<u64>(),
            c.lost_leases
        ));
    }
    s
}
