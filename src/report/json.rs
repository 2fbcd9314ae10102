//! `summary.json`: each cell's [`CellSummary`] in its folder, and the run's summary (every
//! finished cell, the cells not run, whether the run was interrupted) in the run folder. The
//! fields are documented in `docs/book/src/results-schema.md`.

use serde::Serialize;

use super::model::{CellView, RunView};
use super::writer::OutFile;
use super::{ExportError, Exporter};
use crate::results::{CellSummary, SCHEMA_VERSION, SUMMARY_FILE};

/// The JSON exporter.
pub struct Json;

fn to_json<T: Serialize>(v: &T, path: std::path::PathBuf) -> Result<OutFile, ExportError> {
    match serde_json::to_string_pretty(v) {
        Ok(text) => Ok(OutFile::new(path, text)),
        Err(e) => Err(ExportError {
            exporter: "json",
            path,
            source: std::io::Error::other(e),
        }),
    }
}

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn cell_files(&self, cell: &CellView<'_>) -> Result<Vec<OutFile>, ExportError> {
        let path = cell.dir.join(SUMMARY_FILE);
        Ok(vec![to_json(&cell.result.analysis.summary, path)?])
    }

    fn run_files(&self, run: &RunView) -> Result<Vec<OutFile>, ExportError> {
        #[derive(Serialize)]
        struct RunSummary<'a> {
            schema_version: u32,
            interrupted: bool,
            not_run: &'a [String],
            /// The planned cells that could not run, each with why.
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            failed: &'a [crate::results::FailedCell],
            cells: &'a [CellSummary],
            /// Under `--repeat`: each cell over its repetitions (medians, quartiles, verdicts).
            #[serde(skip_serializing_if = "Vec::is_empty")]
            repeated: Vec<crate::gate::CellAggregate>,
        }
        let path = run.dir.join(SUMMARY_FILE);
        let s = RunSummary {
            schema_version: SCHEMA_VERSION,
            interrupted: run.interrupted,
            not_run: &run.not_run,
            failed: &run.failed,
            cells: &run.cells,
            repeated: if run.cells.iter().any(|c| c.id.repetition.is_some()) {
                crate::gate::aggregate(&run.cells)
            } else {
                Vec::new()
            },
        };
        Ok(vec![to_json(&s, path)?])
    }
}
