//! `summary.json`: each cell's [`CellSummary`] in its folder, and the run's summary (every
//! finished cell, the cells not run, whether the run was interrupted) in the run folder. The
//! fields are documented in `docs/results-schema.md`.

use std::path::Path;

use serde::Serialize;

use super::{ExportError, Exporter, RunReport, write_file};
use crate::check::CellResult;
use crate::results::{CellSummary, SCHEMA_VERSION, SUMMARY_FILE};

/// The JSON exporter.
pub struct Json;

fn to_json<T: Serialize>(v: &T, path: &Path) -> Result<String, ExportError> {
    serde_json::to_string_pretty(v).map_err(|e| ExportError {
        exporter: "json",
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })
}

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn cell_finished(&self, dir: &Path, cell: &CellResult) -> Result<(), ExportError> {
        let path = dir.join(SUMMARY_FILE);
        write_file(self.name(), &path, &to_json(&cell.analysis.summary, &path)?)
    }

    fn run_updated(&self, run: &RunReport<'_>) -> Result<(), ExportError> {
        #[derive(Serialize)]
        struct RunSummary<'a> {
            schema_version: u32,
            interrupted: bool,
            not_run: &'a [String],
            cells: &'a [CellSummary],
            /// Under `--repeat`: each cell over its repetitions (medians, quartiles, verdicts).
            #[serde(skip_serializing_if = "Vec::is_empty")]
            repeated: Vec<crate::gate::CellAggregate>,
        }
        let path = run.dir.join(SUMMARY_FILE);
        let s = RunSummary {
            schema_version: SCHEMA_VERSION,
            interrupted: run.interrupted,
            not_run: run.not_run,
            cells: run.cells,
            repeated: if run.cells.iter().any(|c| c.id.repetition.is_some()) {
                crate::gate::aggregate(run.cells)
            } else {
                Vec::new()
            },
        };
        write_file(self.name(), &path, &to_json(&s, &path)?)
    }
}
