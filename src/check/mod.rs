//! Checkers: what a cell's history says about the lock, as three-valued verdicts with the
//! evidence a reader can walk to (Jepsen's `checker` protocol). They read only the stored
//! history and the cell's `cell.json`, so `lockbench check DIR` recomputes offline, with no
//! Docker, exactly what `lockbench run` wrote.
//!
//! [`evaluate`] is the one entry point both use: statistics and every checker over one cell
//! folder. Each checker lives in a file of its own and is listed in [`checkers`].

pub mod folder;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::history::{Event, HistoryError, read_history};
use crate::stats::{self, Analysis, CellInfo};

/// The file beside `history.jsonl` that says what the history does not (see [`CellInfo`]).
pub const CELL_FILE: &str = "cell.json";
/// The history of one cell.
pub const HISTORY_FILE: &str = "history.jsonl";

/// Whether a property held: Jepsen's `:valid?` with its `:unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validity {
    /// The history shows the property held.
    Valid,
    /// The history cannot settle it (outcomes unknown, nothing to judge).
    Unknown,
    /// The history shows a violation.
    Invalid,
}

impl Validity {
    /// Several verdicts as one: any invalid makes it invalid, else any unknown makes it
    /// unknown, else valid (Jepsen's `merge-valid`). No verdict at all is unknown.
    pub fn merge(all: impl IntoIterator<Item = Validity>) -> Validity {
        all.into_iter().max().unwrap_or(Validity::Unknown)
    }
}

impl fmt::Display for Validity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Validity::Valid => "valid",
            Validity::Unknown => "unknown",
            Validity::Invalid => "invalid",
        })
    }
}

/// A pointer into the history: the events behind a finding, by their line in `history.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What the events show, in a sentence naming clients, key, tokens and times.
    pub what: String,
    /// 1-based line numbers in `history.jsonl`.
    pub lines: Vec<usize>,
}

/// One checker's judgement of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The checker's name.
    pub checker: String,
    /// Whether its property held.
    pub validity: Validity,
    /// The counts it found, in a line.
    pub summary: String,
    /// The first findings, each with the history lines to read.
    pub evidence: Vec<Evidence>,
}

/// A cell's history with each event's line number, as checkers read it.
#[derive(Debug, Clone)]
pub struct History {
    /// Events in file order.
    pub events: Vec<Event>,
    /// `lines[i]` is the 1-based line of `events[i]` in `history.jsonl`.
    pub lines: Vec<usize>,
}

impl History {
    /// A history whose events stand on consecutive lines from 1 (as the recorder writes them).
    pub fn new(events: Vec<Event>) -> History {
        let lines = (1..=events.len()).collect();
        History { events, lines }
    }
}

/// Judges one property of a cell's history.
///
/// Contract: reads only `history` and `cell`; returns [`Validity::Invalid`] only with evidence
/// naming the events, and [`Validity::Unknown`] where an unknown (`info`) outcome could explain
/// what it saw.
pub trait Checker: Send + Sync {
    /// A short snake_case name, used as the verdict's `checker`.
    fn name(&self) -> &'static str;
    /// The verdict on `history`.
    fn check(&self, history: &History, cell: &CellInfo) -> Verdict;
}

/// Every checker the suite runs on a cell, in report order.
pub fn checkers() -> Vec<Box<dyn Checker>> {
    Vec::new()
}

/// Everything known about one finished cell: its parameters, statistics and verdicts.
#[derive(Debug, Clone)]
pub struct CellResult {
    /// What the history does not say.
    pub info: CellInfo,
    /// Statistics and histograms.
    pub analysis: Analysis,
    /// One verdict per checker.
    pub verdicts: Vec<Verdict>,
    /// The verdicts merged ([`Validity::merge`]).
    pub validity: Validity,
}

/// Why a cell folder could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The history is missing or damaged.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// `cell.json` is missing or unreadable.
    #[error(
        "{path}: {message} (a cell folder of `lockbench run` has cell.json beside history.jsonl)"
    )]
    Cell { path: PathBuf, message: String },
}

/// Statistics and every checker over the cell folder `dir` (`cell.json` and `history.jsonl`).
pub fn evaluate(dir: &Path) -> Result<CellResult, CheckError> {
    let path = dir.join(CELL_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| CheckError::Cell {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let info: CellInfo = serde_json::from_str(&text).map_err(|e| CheckError::Cell {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let history = History::new(read_history(&dir.join(HISTORY_FILE))?);
    Ok(evaluate_history(&history, info))
}

/// [`evaluate`] on a history in memory.
pub fn evaluate_history(history: &History, info: CellInfo) -> CellResult {
    let analysis = stats::analyze(&history.events, &info);
    let verdicts: Vec<Verdict> = checkers().iter().map(|c| c.check(history, &info)).collect();
    let validity = Validity::merge(verdicts.iter().map(|v| v.validity));
    CellResult {
        info,
        analysis,
        verdicts,
        validity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_jepsens_merge_valid() {
        use Validity::*;
        assert_eq!(Validity::merge([Valid, Valid]), Valid);
        assert_eq!(Validity::merge([Valid, Unknown, Valid]), Unknown);
        assert_eq!(Validity::merge([Unknown, Invalid, Valid]), Invalid);
        assert_eq!(Validity::merge([]), Unknown, "no evidence settles nothing");
        assert_eq!(serde_json::to_string(&Invalid).unwrap(), "\"invalid\"");
    }

    #[test]
    fn a_folder_without_cell_json_names_the_file_and_the_fix() {
        let dir = std::env::temp_dir().join(format!("lockbench-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = evaluate(&dir).unwrap_err().to_string();
        assert!(
            e.contains("cell.json") && e.contains("lockbench run"),
            "{e}"
        );
    }
}
