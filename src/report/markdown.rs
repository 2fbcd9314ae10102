//! The comparison table printed at the end of a run and written to `report.md`.

use crate::stats::CellSummary;

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
            c.system,
            c.strategy,
            c.workload,
            c.clients,
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
