//! The results schema: the files a run leaves in its folder and the types they hold, below
//! everything that reads or writes them. The checkers ([`crate::check`]) and statistics
//! ([`crate::stats`]) fill these types, the exporters ([`crate::report`]) write them, the gate
//! ([`crate::gate`]) and capacity ([`crate::capacity`]) read them back; none of those imports
//! another upward for a field's type or a file's name. The fields are documented in
//! `docs/book/src/results-schema.md`.
//!
//! A run folder holds `summary.json` (every finished cell), `plan.toml` and `cells/<id>/`; each
//! cell folder holds [`CELL_FILE`], [`HISTORY_FILE`] and [`SUMMARY_FILE`] (and what the
//! exporters draw from them).

mod cell;
mod driver;
pub mod floor;
mod safety;
mod summary;
#[cfg(test)]
pub(crate) mod testkit;

pub use crate::workload::{Expect, LockKind};
pub use cell::{CellInfo, spec_acquire_timeout, spec_duration};
pub use driver::DriverRecord;
pub use safety::{Overlaps, Safety, SafetyVerdict, Violation};
pub use summary::{
    CellSummary, FaultWindow, FifoBasis, LatencySummary, ModeFigures, ReentryCost, RwLockFigures,
    SecondStats, SemaphoreFigures, TryLockFigures,
};

use serde::Deserialize;

/// The file beside `history.jsonl` that says what the history does not (see [`CellInfo`]).
pub const CELL_FILE: &str = "cell.json";
/// The history of one cell.
pub const HISTORY_FILE: &str = "history.jsonl";
/// A cell's [`CellSummary`] in its folder, and the run's summary (every finished cell, the
/// cells not run, whether the run was interrupted) in the run folder: one name for both.
pub const SUMMARY_FILE: &str = "summary.json";

/// The file a cell that could not run leaves in its folder instead of a history: why, with
/// its servers' last log lines where its cluster did not start.
pub const ERROR_FILE: &str = "error.txt";

/// A planned cell that could not run (its cluster did not start, or the cell failed before
/// its verdict), as the run's `summary.json` lists it under `failed`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct FailedCell {
    /// The cell's id (its folder's name).
    pub id: String,
    /// Why, in one line; the cell folder's [`ERROR_FILE`] has the whole story.
    pub reason: String,
}

/// Version of the [`CellSummary`] (and of `cell.json`) layout; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 7;

/// Why a results file's `schema_version` does not let this lockbench read it. The messages
/// say what to do; the caller names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// Not JSON, or not an object.
    #[error("{0}")]
    NotJson(String),
    /// A run summary without `schema_version`.
    #[error("no schema_version: not a run summary")]
    Missing,
    /// A `cell.json` written for a newer schema: its fields could mean something else now.
    #[error(
        "schema_version {0}, this lockbench reads up to {SCHEMA_VERSION}: check the folder with the lockbench that wrote it"
    )]
    NewerCell(u32),
    /// A run summary of another schema: the gate compares only like with like.
    #[error(
        "summary schema_version {0}, this lockbench reads {SCHEMA_VERSION}: rerun it with this version"
    )]
    OtherSummary(u32),
}

/// The `schema_version` of a results file's text, if it has one.
fn schema_version(text: &str) -> Result<Option<u32>, SchemaError> {
    #[derive(Deserialize)]
    struct Head {
        schema_version: Option<u32>,
    }
    serde_json::from_str::<Head>(text)
        .map(|h| h.schema_version)
        .map_err(|e| SchemaError::NotJson(e.to_string()))
}

/// Refuses a `cell.json` written for a results schema newer than this lockbench reads. A file
/// without `schema_version` was written before cell.json carried one (schema 4 and earlier),
/// whose layout this version reads.
pub fn check_cell_version(text: &str) -> Result<(), SchemaError> {
    match schema_version(text)? {
        Some(v) if v > SCHEMA_VERSION => Err(SchemaError::NewerCell(v)),
        _ => Ok(()),
    }
}

/// Refuses a run's `summary.json` of any schema but this one, or without a version (not a run
/// summary at all).
pub fn check_summary_version(text: &str) -> Result<(), SchemaError> {
    match schema_version(text)? {
        Some(SCHEMA_VERSION) => Ok(()),
        Some(v) => Err(SchemaError::OtherSummary(v)),
        None => Err(SchemaError::Missing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_refused_or_missing_as_documented() {
        let v = |n: u32| format!("{{\"schema_version\": {n}}}");
        assert_eq!(
            check_cell_version("{}"),
            Ok(()),
            "cell.json before versions"
        );
        assert_eq!(check_cell_version(&v(SCHEMA_VERSION)), Ok(()));
        assert_eq!(check_cell_version(&v(SCHEMA_VERSION - 1)), Ok(()));
        assert_eq!(
            check_cell_version(&v(SCHEMA_VERSION + 1)),
            Err(SchemaError::NewerCell(SCHEMA_VERSION + 1))
        );
        assert_eq!(check_summary_version(&v(SCHEMA_VERSION)), Ok(()));
        assert_eq!(
            check_summary_version(&v(SCHEMA_VERSION - 1)),
            Err(SchemaError::OtherSummary(SCHEMA_VERSION - 1))
        );
        assert_eq!(check_summary_version("{}"), Err(SchemaError::Missing));
        assert!(matches!(
            check_summary_version("[1"),
            Err(SchemaError::NotJson(_))
        ));
    }
}
