//! `lockbench report DIR`: the reports of a run folder drawn again from its stored results, no
//! Docker. The run-level hooks get the cells' stored `summary.json` (the record, as the run
//! wrote it); the cell hooks get each cell evaluated again from its history (what an exporter
//! drawing per-cell figures needs), exactly as `lockbench check --write` does.

use std::path::{Path, PathBuf};

use super::{ExportError, Exporters, RunReport};
use crate::results::{CellSummary, SUMMARY_FILE};

/// What drawing the reports again found.
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// Finished cells (those with a `summary.json`), in plan order.
    pub cells: usize,
    /// Cell folders without a `summary.json` (the run stopped inside them): left out.
    pub unfinished: Vec<PathBuf>,
    /// What the reports could not use, each naming its file and the fix; the rest was drawn.
    pub warnings: Vec<String>,
}

/// Why the reports could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// The folder does not exist.
    #[error("{0}: no such folder; pass a run folder, e.g. results/latest or results/<run>")]
    Missing(PathBuf),
    /// A folder that is not a run folder (or a cell folder, which has no run-level reports).
    #[error(
        "{path}: not a lockbench run folder (a run folder has cells/ and plan.toml){hint}; pass results/<run>, e.g. results/latest"
    )]
    NotARunFolder {
        /// The folder given.
        path: PathBuf,
        /// More on what it is, if known.
        hint: String,
    },
    /// A folder or file that could not be read.
    #[error("{path}: {source}")]
    Io {
        /// What could not be read.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A stored summary that does not parse.
    #[error(
        "{path}: not a cell summary ({message}); `lockbench check DIR --write` writes it again from the cell's history"
    )]
    Summary {
        /// The `summary.json`.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A report that could not be written.
    #[error(transparent)]
    Export(#[from] ExportError),
}

/// Draws the reports of the run folder `dir` again through `exporters` (their cell hooks for
/// every finished cell that still evaluates, then their run hook once, as at a run's end).
pub fn rebuild(dir: &Path, exporters: &Exporters) -> Result<Rebuilt, RebuildError> {
    if !dir.exists() {
        return Err(RebuildError::Missing(dir.to_path_buf()));
    }
    if !dir.join("cells").is_dir() {
        let hint = if dir.join(crate::results::CELL_FILE).is_file() {
            ": it is one cell's folder, whose run folder is two levels up".to_string()
        } else {
            String::new()
        };
        return Err(RebuildError::NotARunFolder {
            path: dir.to_path_buf(),
            hint,
        });
    }
    let cell_dirs = crate::check::folder::cell_dirs(dir).map_err(|e| RebuildError::Io {
        path: dir.join("cells"),
        source: std::io::Error::other(e.to_string()),
    })?;
    let mut out = Rebuilt::default();
    let mut summaries = Vec::new();
    for cell in cell_dirs {
        let path = cell.join(SUMMARY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                out.unfinished.push(cell);
                continue;
            }
            Err(source) => return Err(RebuildError::Io { path, source }),
        };
        let stored: CellSummary =
            serde_json::from_str(&text).map_err(|e| RebuildError::Summary {
                path: path.clone(),
                message: e.to_string(),
            })?;
        match crate::check::evaluate(&cell) {
            Ok(result) => {
                if result.analysis.summary != stored {
                    out.warnings.push(format!(
                        "{}: the stored summary.json differs from what its history gives now; \
                         the reports show the stored one (`lockbench check DIR --write` rewrites it)",
                        cell.display()
                    ));
                }
                exporters.cell_finished(&cell, &result)?;
            }
            Err(e) => out.warnings.push(format!(
                "{}: its figures were not drawn again: {e}",
                cell.display()
            )),
        }
        summaries.push(stored);
    }
    let (interrupted, not_run, failed) = run_record(dir, &mut out.warnings);
    out.cells = summaries.len();
    exporters.run_updated(&RunReport {
        dir,
        cells: &summaries,
        not_run: &not_run,
        failed: &failed,
        interrupted,
        finished: true,
    })?;
    Ok(out)
}

/// Whether the run was interrupted, which cells it did not run and which of those failed,
/// from the run's `summary.json`; a run that never wrote one reads as not interrupted,
/// nothing left out.
fn run_record(
    dir: &Path,
    warnings: &mut Vec<String>,
) -> (bool, Vec<String>, Vec<crate::results::FailedCell>) {
    let path = dir.join(SUMMARY_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return (false, Vec::new(), Vec::new());
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => (
            v.get("interrupted")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            v.get("not_run")
                .and_then(serde_json::Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            v.get("failed")
                .and_then(|f| serde_json::from_value(f.clone()).ok())
                .unwrap_or_default(),
        ),
        Err(e) => {
            warnings.push(format!(
                "{}: unreadable ({e}); the reports do not say which cells were not run",
                path.display()
            ));
            (false, Vec::new(), Vec::new())
        }
    }
}
