//! `acquire.hgrm`: a cell's acquire-latency histogram in HdrHistogram's percentile text format
//! (milliseconds), ready for HdrHistogram's plotter.

use std::path::Path;

use super::{ExportError, Exporter};
use crate::check::CellResult;

/// The file name in a cell folder.
pub const ACQUIRE_FILE: &str = "acquire.hgrm";

/// The `.hgrm` exporter.
pub struct Hgrm;

impl Exporter for Hgrm {
    fn name(&self) -> &'static str {
        "hgrm"
    }

    fn cell_finished(&self, dir: &Path, cell: &CellResult) -> Result<(), ExportError> {
        let path = dir.join(ACQUIRE_FILE);
        crate::stats::write_hgrm_file(&cell.analysis.acquire, &path).map_err(|source| ExportError {
            exporter: self.name(),
            path,
            source,
        })
    }
}
