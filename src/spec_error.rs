//! Why a workload or chaos schedule file was refused ([`SpecError`]), below both the file
//! readers ([`crate::workload`], which re-exports it, and [`crate::nemesis::schedule`]) and the
//! fault kinds, which raise it while reading their parameters ([`crate::fault::Params`]).

/// Why a workload file was refused; every message names the file and says what would be valid.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error(
        "{origin}: cannot read the workload file: {source} (check the path; the bundled workloads are in workloads/)"
    )]
    Read {
        origin: String,
        source: std::io::Error,
    },
    /// A chaos schedule file could not be read.
    #[error(
        "{origin}: cannot read the chaos schedule file: {source} (check the path; the bundled schedules are in chaos/)"
    )]
    ReadSchedule {
        origin: String,
        source: std::io::Error,
    },
    /// A target file could not be read.
    #[error("{origin}: cannot read the target file: {source} (check the path)")]
    ReadTarget {
        origin: String,
        source: std::io::Error,
    },
    /// TOML syntax, an unknown field, or a value of the wrong type.
    #[error("{origin}:{line}:{column}: {message}")]
    Parse {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A number or duration outside what lockbench accepts.
    #[error("{origin}: field '{field}' = {value} is out of range: valid {valid}")]
    OutOfRange {
        origin: String,
        field: String,
        value: String,
        valid: String,
    },
    /// A value that does not parse or is not one of the allowed ones.
    #[error("{origin}: field '{field}' = {value} is invalid: {expected}")]
    Invalid {
        origin: String,
        field: String,
        value: String,
        expected: String,
    },
    /// A required field is absent.
    #[error("{origin}: field '{field}' is missing: {hint}")]
    Missing {
        origin: String,
        field: String,
        hint: String,
    },
    /// Fields that cannot be used together.
    #[error("{origin}: {message}")]
    Conflict { origin: String, message: String },
}
