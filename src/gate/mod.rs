//! The regression gate (`lockbench baseline save`, `lockbench gate`): a run's cells, taken over
//! their repetitions ([`aggregate()`]), saved as a [`Baseline`] and later compared with another
//! run ([`compare()`]). A speed metric regresses only when its median worsens by more than both
//! its floor and what the two sides' spreads allow; improvements are reported, never failed;
//! safety is strict. The outcome prints as Markdown and JUnit ([`output`]).

pub mod aggregate;
pub mod baseline;
pub mod compare;
pub mod current;
pub mod machine;
pub mod metric;
pub mod nearest;
pub mod output;
pub mod paired;
pub mod spread;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use aggregate::{CellAggregate, aggregate};
pub use baseline::Baseline;
pub use compare::{Outcome, Thresholds, compare};
pub use metric::Metric;
pub use paired::{Pair, parse_pair};
pub use spread::Spread;

/// Why the gate could not judge (exit 2): the fix is in the message.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// A file or folder that cannot be used.
    #[error("{}: {message}", path.display())]
    Input { path: PathBuf, message: String },
    /// A baseline or summary of another layout version.
    #[error("{0}")]
    Schema(String),
    /// Baseline cells the current run lacks.
    #[error(
        "the current run lacks {} baseline cell(s): {}; run the baseline's matrix (same systems, \
         strategies, workloads, schedules and client counts) or save a new baseline",
        .0.len(),
        .0.join(", ")
    )]
    MissingCells(Vec<String>),
}

/// Compares the runs in `current_dirs` (one, or several of the same matrix whose repetitions
/// are pooled) with the baseline file in `baselines`; without one, judges their safety alone.
/// Several baselines (one per kind of host) need `--normalize`: the run is compared with the
/// one measured on the host most like its own ([`nearest`]), and a note says which and why.
pub fn gate(
    baselines: &[PathBuf],
    current_dirs: &[PathBuf],
    th: &Thresholds,
) -> Result<Outcome, GateError> {
    if baselines.len() > 1 && th.normalize.is_none() {
        return Err(GateError::Input {
            path: baselines[1].clone(),
            message: "a second --baseline is chosen between by the machine factor: add \
                      --normalize, or give one baseline"
                .into(),
        });
    }
    let loaded = baselines
        .iter()
        .map(|p| Baseline::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut runs = Vec::new();
    for dir in current_dirs {
        let run = current::RunResults::read(dir)?;
        if run.cells.is_empty() {
            return Err(GateError::Input {
                path: dir.clone(),
                message: "the run has no finished cell".into(),
            });
        }
        runs.push((dir, run));
    }
    let Some((_, first)) = runs.first() else {
        return Err(GateError::Input {
            path: baseline::latest_run(),
            message: "no run to judge: give --current DIR".into(),
        });
    };
    let environment = first.environment.clone();
    let pooled: Vec<_> = runs.iter().flat_map(|(_, r)| r.cells.clone()).collect();
    let mut cells = aggregate(&pooled);
    if runs.len() > 1 {
        for cell in &mut cells {
            if let Some(e) = &mut cell.safety.first_violation {
                e.run = run_holding(&runs, e).map(|d| d.display().to_string());
            }
        }
    }
    if loaded.len() < 2 {
        return compare(loaded.first(), &cells, environment.as_ref(), th);
    }
    let (best, distances) = nearest::nearest(&loaded, &cells);
    let mut outcome = compare(Some(&loaded[best]), &cells, environment.as_ref(), th)?;
    outcome
        .notes
        .insert(0, chosen_note(baselines, best, &distances));
    Ok(outcome)
}

/// Which of several baselines was taken, and every baseline's distance from this host.
fn chosen_note(paths: &[PathBuf], best: usize, distances: &[Option<f64>]) -> String {
    let each: Vec<String> = paths
        .iter()
        .zip(distances)
        .map(|(p, d)| match d {
            Some(d) => format!("{} {d:.2}", p.display()),
            None => format!(
                "{} (fewer than {} cells shared)",
                p.display(),
                machine::MIN_CELLS
            ),
        })
        .collect();
    format!(
        "baseline: {}, measured on the host most like this one (mean |ln| of the suite's machine \
         factors: {})",
        paths[best].display(),
        each.join("; ")
    )
}

/// `--pair A=B`: within the runs in `current_dirs`, each cell of workload B against the same
/// cell of workload A, round by round ([`paired`]).
pub fn gate_paired(
    current_dirs: &[PathBuf],
    pair: &Pair,
    th: &Thresholds,
) -> Result<Outcome, GateError> {
    let mut runs = Vec::new();
    for dir in current_dirs {
        runs.push((dir.clone(), current::RunResults::read(dir)?.cells));
    }
    paired::compare_paired(&runs, pair, th)
}

/// The first of `runs` whose repetition `e.cell_folder` has the violation `e` names: with
/// several runs pooled, repetition numbers repeat from run to run.
fn run_holding<'a>(
    runs: &'a [(&'a PathBuf, current::RunResults)],
    e: &aggregate::ViolationAt,
) -> Option<&'a PathBuf> {
    runs.iter()
        .find(|(_, run)| {
            run.cells.iter().any(|s| {
                s.id.to_string() == e.cell_folder
                    && s.safety
                        .as_ref()
                        .and_then(|x| x.violations.first())
                        .is_some_and(|v| v.lines == e.lines && v.checker == e.checker)
            })
        })
        .map(|(dir, _)| *dir)
}
