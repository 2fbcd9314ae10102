//! `lockbench capacity`, around the runner: the plan of a concurrency sweep (one system, one
//! strategy, one workload, the client counts as `lockbench run --clients` would give them),
//! and what is done with its cells once they ran: the [`Capacity`] report written to
//! `capacity.json`, the reports redrawn (the plots exporter draws the capacity figure from
//! that file), and the summary printed. The run itself is `lockbench run`'s
//! ([`crate::runner::run`], one cluster per system, so every count runs on one cluster).

use std::path::Path;
use std::time::Duration;

use super::report::Capacity;
use super::slo::Slo;
use crate::check::folder::ResultsWriter;
use crate::plan::{Overrides, Plan};
use crate::recipe::Strategy;
use crate::results::CellSummary;
use crate::system::System;
use crate::workload::Workload;

/// The least number of distinct client counts a sweep needs (the USL has three parameters).
pub const MIN_LEVELS: usize = 3;

/// What a sweep runs: one system × strategy × workload at each of `clients`.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The system.
    pub system: System,
    /// The waiting strategy.
    pub strategy: Strategy,
    /// The client counts, each a cell.
    pub clients: Vec<u32>,
    /// Each cell's length instead of the workload's.
    pub duration: Option<Duration>,
    /// The seed instead of the workload's.
    pub seed: Option<u64>,
}

impl Sweep {
    /// The plan of the sweep, as `lockbench run --systems S --strategies X --clients …`
    /// would make it. Fewer than [`MIN_LEVELS`] distinct client counts, or a strategy the
    /// system does not have, is an error saying what to pass instead.
    pub fn plan(&self, run_id: &str, workload: &Workload) -> anyhow::Result<Plan> {
        let mut distinct = self.clients.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() < MIN_LEVELS {
            anyhow::bail!(
                "--clients: the USL fit needs at least {MIN_LEVELS} distinct client counts, got {} ({}); sweep e.g. --clients 1,2,4,8,16",
                distinct.len(),
                distinct
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        let ov = Overrides {
            strategies: Some(vec![self.strategy]),
            clients: Some(distinct),
            duration: self.duration,
            seed: self.seed,
            ..Overrides::default()
        };
        let plan = Plan::expand(run_id, &[self.system], std::slice::from_ref(workload), &ov)?;
        if plan.cells.is_empty() {
            anyhow::bail!(
                "nothing to run for {} {}: {}",
                self.system,
                self.strategy,
                plan.skipped.join("; ")
            );
        }
        Ok(plan)
    }
}

/// After the sweep ran into the run folder `dir`: the capacity report of its `cells` against
/// `slo`, written to `dir/capacity.json`, and the run's reports redrawn through `exporters`
/// (with `report::Exporters::reports`, the plots, `report.md` and `report.html`, which then
/// show the capacity figure).
pub fn finish<W: ResultsWriter + ?Sized>(
    dir: &Path,
    cells: &[CellSummary],
    slo: Option<Slo>,
    exporters: &W,
) -> anyhow::Result<Capacity> {
    let capacity = Capacity::of(cells, slo)?;
    super::file::write(dir, &capacity)?;
    exporters
        .write_run(dir, cells, true)
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(capacity)
}

/// A few lines for the terminal: λ, σ, κ with their standard errors, R², N*, the peak
/// throughput, and the clients within the SLO, measured and predicted.
pub fn summary_lines(c: &Capacity) -> Vec<String> {
    let counts: std::collections::BTreeSet<u32> = c.points.iter().map(|p| p.clients).collect();
    let mut lines = vec![format!(
        "capacity of {} {} (workload {}), {} client counts{}: {}",
        c.system,
        c.strategy,
        c.workload,
        counts.len(),
        if counts.len() < c.points.len() {
            format!(" ({} cells with the repetitions)", c.points.len())
        } else {
            String::new()
        },
        c.points
            .iter()
            .map(|p| format!("{}→{:.1}/s", p.clients, p.throughput))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    let se = |v: Option<f64>| v.map_or(" (no SE: 3 points)".to_string(), |s| format!(" ± {s:.4}"));
    match c.fitted() {
        Some(f) => {
            lines.push(format!(
                "USL fit: λ = {:.3}/s{}, σ = {:.5}{}, κ = {:.6}{}, R² = {:.4}",
                f.lambda,
                se(f.lambda_se),
                f.sigma,
                se(f.sigma_se),
                f.kappa,
                se(f.kappa_se),
                f.r_squared
            ));
            lines.push(match (c.peak_concurrency, c.peak_throughput) {
                (Some(n), Some(x)) => {
                    format!("peak: N* = {n:.1} clients, predicted peak throughput {x:.1}/s")
                }
                _ if f.sigma >= 1.0 => format!(
                    "peak: at 1 client (σ ≥ 1: every added client costs throughput; {:.1}/s at 1)",
                    f.predict(1.0)
                ),
                _ => "peak: none within reach (κ ≤ 0: throughput still rising towards λ/σ)"
                    .to_string(),
            });
        }
        None => lines.push(format!("USL fit: failed: {}", fit_error(c))),
    }
    if let Some(slo) = c.slo_p99_us {
        let n = |v: Option<u32>| v.map_or("none".to_string(), |n| n.to_string());
        let predicted =
            c.usl_prediction_within_slo
                .as_ref()
                .map_or("no USL prediction".to_string(), |p| {
                    format!(
                        "USL predicts {} (p99 ≈ {:.2} × N/X(N), searched up to {})",
                        n(p.max_clients),
                        p.p99_per_cycle_time,
                        p.searched_up_to
                    )
                });
        lines.push(format!(
            "SLO p99 ≤ {slo} µs: max clients measured within {}; {predicted}",
            n(c.max_clients_within_slo)
        ));
    }
    lines
}

fn fit_error(c: &Capacity) -> &str {
    match &c.fit {
        super::report::FitOutcome::Failed(why) => why,
        super::report::FitOutcome::Fitted(_) => "",
    }
}
