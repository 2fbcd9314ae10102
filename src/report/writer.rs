//! The one place the exporters' files reach the disk. Renderers return [`OutFile`]s (a path
//! and its bytes) and never open a file; [`write()`] creates the folders they name and writes
//! them, naming the exporter in any error.

use std::path::{Path, PathBuf};

use super::ExportError;

/// One file an exporter made: where it goes and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutFile {
    /// Its path: inside the run folder (or the cell folder) the exporter was given.
    pub path: PathBuf,
    /// Its content.
    pub bytes: Vec<u8>,
}

impl OutFile {
    /// `bytes` to be written to `path`.
    pub fn new(path: impl Into<PathBuf>, bytes: impl Into<Vec<u8>>) -> OutFile {
        OutFile {
            path: path.into(),
            bytes: bytes.into(),
        }
    }
}

/// Writes every file of `files` in order, creating missing parent folders (`plots/`); the
/// first failure stops and is returned, naming `exporter` and the file.
pub fn write(exporter: &'static str, files: &[OutFile]) -> Result<(), ExportError> {
    files.iter().try_for_each(|f| write_one(exporter, f))
}

fn write_one(exporter: &'static str, file: &OutFile) -> Result<(), ExportError> {
    let err = |path: &Path, source| ExportError {
        exporter,
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = file.path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(|e| err(parent, e))?;
    }
    std::fs::write(&file.path, &file.bytes).map_err(|e| err(&file.path, e))
}
