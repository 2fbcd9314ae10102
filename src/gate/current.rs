//! A finished run read back for the gate: its cells' summaries and its environment.

use std::path::Path;

use serde::Deserialize;

use super::GateError;
use crate::stats::{CellSummary, SCHEMA_VERSION};

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
        let path = dir.join(crate::report::json::SUMMARY_FILE);
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
        #[derive(Deserialize)]
        struct Head {
            schema_version: Option<u32>,
            #[serde(default)]
            interrupted: bool,
            #[serde(default)]
            not_run: Vec<String>,
        }
        let head: Head =
            serde_json::from_str(&text).map_err(|e| bad(format!("not a run summary: {e}")))?;
        match head.schema_version {
            Some(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(GateError::Schema(format!(
                    "{}: summary schema_version {v}, this lockbench reads {SCHEMA_VERSION}: \
                     rerun it with this version",
                    path.display()
                )));
            }
            None => return Err(bad("no schema_version: not a run summary".into())),
        }
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
