//! `<run>/capacity.json`: a [`Capacity`] written next to the run's other results, and read
//! back by the plots exporter to draw its figure.

use std::path::{Path, PathBuf};

use super::report::{CAPACITY_FILE, Capacity};

/// Why `capacity.json` could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum CapacityFileError {
    /// The file could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a capacity report.
    #[error(
        "{path}: not a capacity report ({message}); `lockbench capacity` writes it again (or delete it to draw the run's reports without it)"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
}

/// The path of the capacity report in the run folder `run`.
pub fn path(run: &Path) -> PathBuf {
    run.join(CAPACITY_FILE)
}

/// Writes `capacity` as pretty JSON to `<run>/capacity.json`.
pub fn write(run: &Path, capacity: &Capacity) -> Result<PathBuf, CapacityFileError> {
    let path = path(run);
    let text = serde_json::to_string_pretty(capacity).map_err(|e| CapacityFileError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&path, text + "\n").map_err(|source| CapacityFileError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Reads `<run>/capacity.json`; `None` when the run has none (not a capacity sweep).
pub fn read(run: &Path) -> Result<Option<Capacity>, CapacityFileError> {
    let path = path(run);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CapacityFileError::Io { path, source }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| CapacityFileError::Parse {
            path,
            message: e.to_string(),
        })
}
