//! `lockbench check DIR`: every cell of a run folder (or one cell folder) evaluated again from
//! its stored history and `cell.json`, with no Docker, and compared with what the run wrote.

use std::path::{Path, PathBuf};

use super::{CellResult, CheckError, evaluate};
use crate::plan::Plan;
use crate::results::{CELL_FILE, CellSummary, SUMMARY_FILE};

/// Why a [`ResultsWriter`] could not write a file (its own error, boxed).
pub type WriteError = Box<dyn std::error::Error + Send + Sync>;

/// What rewriting a run folder's files asks of whatever writes them (the report's exporters,
/// `crate::report::Exporters`, implement it): `lockbench check --write` and `lockbench
/// capacity` name this trait, so that the checkers (and capacity) sit below the reports.
pub trait ResultsWriter {
    /// Writes the files of the cell folder `dir` from `result`, evaluated again.
    fn write_cell(&self, dir: &Path, result: &CellResult) -> Result<(), WriteError>;
    /// Rewrites the run-level files of the run folder `dir` from its cells' summaries, in plan
    /// order; `finished` once the run is over.
    fn write_run(
        &self,
        dir: &Path,
        cells: &[CellSummary],
        finished: bool,
    ) -> Result<(), WriteError>;
}

/// One cell evaluated again.
#[derive(Debug)]
pub struct Rechecked {
    /// The cell's folder.
    pub dir: PathBuf,
    /// What evaluating it now gives.
    pub result: CellResult,
    /// Whether that equals the `summary.json` stored beside it (`None` when none is stored;
    /// `false` when the stored one cannot be read).
    pub matches_stored: Option<bool>,
}

/// Why a folder could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// Neither a run folder (with `cells/`) nor a cell folder (with `cell.json`).
    #[error(
        "{0}: not a lockbench run or cell folder (a run folder has cells/, a cell folder has cell.json); pass results/<run> or one of its cells/<id>"
    )]
    NotAResultsFolder(PathBuf),
    /// A folder that could not be read.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A cell that could not be evaluated.
    #[error(transparent)]
    Cell(#[from] CheckError),
    /// A file `--write` could not rewrite.
    #[error("{0}")]
    Export(WriteError),
}

/// The cell folders of `dir`: itself if it is a cell, else its `cells/*` in plan order (name
/// order where the plan is missing).
pub fn cell_dirs(dir: &Path) -> Result<Vec<PathBuf>, FolderError> {
    if dir.join(CELL_FILE).is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let cells = dir.join("cells");
    if !cells.is_dir() {
        return Err(FolderError::NotAResultsFolder(dir.to_path_buf()));
    }
    let io = |source| FolderError::Io {
        path: cells.clone(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&cells).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.join(CELL_FILE).is_file() {
            out.push(p);
        }
    }
    out.sort();
    let order: Vec<String> = std::fs::read_to_string(dir.join("plan.toml"))
        .ok()
        .and_then(|t| Plan::from_toml(&t, "plan.toml").ok())
        .map(|p| p.cells.iter().map(|c| c.id().to_string()).collect())
        .unwrap_or_default();
    out.sort_by_key(|p| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        order
            .iter()
            .position(|id| Some(id) == name.as_ref())
            .unwrap_or(usize::MAX)
    });
    Ok(out)
}

/// What `lockbench check` says of the comparison with the stored summaries: how many cells it
/// evaluated, how many had a `summary.json` to compare with, and which differ. It never says
/// "matches" of a cell that had nothing stored (a folder of an interrupted run, or one whose
/// summaries were deleted).
pub fn comparison(cells: &[Rechecked], write: bool) -> String {
    let n = cells.len();
    let stored = cells.iter().filter(|c| c.matches_stored.is_some()).count();
    let differ: Vec<String> = cells
        .iter()
        .filter(|c| c.matches_stored == Some(false))
        .map(|c| c.dir.display().to_string())
        .collect();
    let unstored = match n - stored {
        0 => String::new(),
        k if k == n => String::new(),
        k => format!("; {k} had no stored summary.json to compare with"),
    };
    if stored == 0 {
        return format!(
            "{n} cells evaluated from their histories; none had a stored summary.json to compare with{}",
            if write { " (written now)" } else { "" }
        );
    }
    if differ.is_empty() {
        return if stored == n {
            format!("{n} cells; every stored summary matches the recomputed one")
        } else {
            format!(
                "{n} cells evaluated; the {stored} stored summaries match the recomputed ones{unstored}"
            )
        };
    }
    format!(
        "{} of {n} cells differ from their stored summary.json{}: {}{unstored}",
        differ.len(),
        if write {
            " (rewritten)"
        } else {
            " (use --write to rewrite)"
        },
        differ.join(", ")
    )
}

/// Evaluates every cell of `dir` again and compares each with its stored summary; with
/// `write`, rewrites the cells' and the run's files through it.
pub fn recheck<W: ResultsWriter + ?Sized>(
    dir: &Path,
    write: Option<&W>,
) -> Result<Vec<Rechecked>, FolderError> {
    let mut out = Vec::new();
    for cell in cell_dirs(dir)? {
        let result = evaluate(&cell)?;
        // A stored summary this version cannot read (another schema, damaged) differs from
        // the recomputed one; only a missing file leaves nothing to compare with.
        let matches_stored = std::fs::read_to_string(cell.join(SUMMARY_FILE))
            .ok()
            .map(|t| {
                serde_json::from_str::<CellSummary>(&t)
                    .is_ok_and(|stored| stored == result.analysis.summary)
            });
        if let Some(ex) = write {
            ex.write_cell(&cell, &result).map_err(|e| FolderError::Io {
                path: cell.clone(),
                source: std::io::Error::other(e),
            })?;
        }
        out.push(Rechecked {
            dir: cell,
            result,
            matches_stored,
        });
    }
    if let Some(ex) = write
        && dir.join("cells").is_dir()
    {
        let summaries: Vec<CellSummary> = out
            .iter()
            .map(|r| r.result.analysis.summary.clone())
            .collect();
        ex.write_run(dir, &summaries, false)
            .map_err(FolderError::Export)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::cell;
    use crate::check::{History, evaluate_history};

    fn rechecked(name: &str, matches_stored: Option<bool>) -> Rechecked {
        Rechecked {
            dir: PathBuf::from(name),
            result: evaluate_history(&History::new(Vec::new()), cell(1)),
            matches_stored,
        }
    }

    #[test]
    fn the_comparison_says_what_was_compared() {
        let none = [rechecked("a", None), rechecked("b", None)];
        assert_eq!(
            comparison(&none, false),
            "2 cells evaluated from their histories; none had a stored summary.json to compare with"
        );
        let all = [rechecked("a", Some(true)), rechecked("b", Some(true))];
        assert_eq!(
            comparison(&all, false),
            "2 cells; every stored summary matches the recomputed one"
        );
        let some = [rechecked("a", Some(true)), rechecked("b", None)];
        assert_eq!(
            comparison(&some, false),
            "2 cells evaluated; the 1 stored summaries match the recomputed ones; 1 had no stored summary.json to compare with"
        );
        let differ = [
            rechecked("a", Some(false)),
            rechecked("b", None),
            rechecked("c", Some(true)),
        ];
        assert_eq!(
            comparison(&differ, true),
            "1 of 3 cells differ from their stored summary.json (rewritten): a; 1 had no stored summary.json to compare with"
        );
    }
}
