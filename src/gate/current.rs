//! A finished run read back for the gate: its cells' summaries and its environment.

use std::path::Path;

use serde::Deserialize;

use super::GateError;
use crate::results::{CellSummary, SchemaError, check_summary_version};

/// What the gate reads of a run folder.
#[derive(Debug)]
pub struct RunResults {
    /// Every finished cell (every repetition), as the run's `summary.json` lists them.
    pub cells: Vec<CellSummary>,
    /// The run's `environment.json`, when it has one.
    pub environment: Option<serde_json::Value>,
}

impl RunResults {
    /// Reads `dir/summary.json` (and `environment.json`); a folder that is not a finished,
    /// uninterrupted run of this schema is an error that says so.
    pub fn read(dir: &Path) -> Result<RunResults, GateError> {
        let path = dir.join(crate::results::SUMMARY_FILE);
        let bad = |message: String| GateError::Input {
            path: path.clone(),
            message,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            bad(format!(
                "cannot read it ({e}): give a run folder made by `lockbench run`, e.g. \
                 results/latest"
            ))
        })?;
        match check_summary_version(&text) {
            Ok(()) => {}
            Err(e @ SchemaError::OtherSummary(_)) => {
                return Err(GateError::Schema(format!("{}: {e}", path.display())));
            }
            Err(SchemaError::NotJson(e)) => return Err(bad(format!("not a run summary: {e}"))),
            Err(e) => return Err(bad(e.to_string())),
        }
        #[derive(Deserialize)]
        struct Head {
            #[serde(default)]
            interrupted: bool,
            #[serde(default)]
            not_run: Vec<String>,
        }
        let head: Head =
            serde_json::from_str(&text).map_err(|e| bad(format!("not a run summary: {e}")))?;
        if head.interrupted || !head.not_run.is_empty() {
            return Err(bad(format!(
                "the run was interrupted ({} cells not run: {}): gate a complete run",
                head.not_run.len(),
                head.not_run.join(", ")
            )));
        }
        #[derive(Deserialize)]
        struct Cells {
            cells: Vec<CellSummary>,
        }
        let cells: Cells =
            serde_json::from_str(&text).map_err(|e| bad(format!("not a run summary: {e}")))?;
        let env_path = dir.join(crate::environment::ENVIRONMENT_FILE);
        let environment = std::fs::read_to_string(&env_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        Ok(RunResults {
            cells: cells.cells,
            environment,
        })
    }
}
