//! `acquire.hgrm`: a cell's acquire-latency histogram in HdrHistogram's percentile text format
//! (milliseconds), ready for HdrHistogram's plotter.

use super::model::CellView;
use super::writer::OutFile;
use super::{ExportError, Exporter};

/// The file name in a cell folder.
pub const ACQUIRE_FILE: &str = "acquire.hgrm";

/// The `.hgrm` exporter.
pub struct Hgrm;

impl Exporter for Hgrm {
    fn name(&self) -> &'static str {
        "hgrm"
    }

    fn cell_files(&self, cell: &CellView<'_>) -> Result<Vec<OutFile>, ExportError> {
        let path = cell.dir.join(ACQUIRE_FILE);
        let mut bytes = Vec::new();
        match crate::stats::write_hgrm(&cell.result.analysis.acquire, &mut bytes) {
            Ok(()) => Ok(vec![OutFile::new(path, bytes)]),
            Err(source) => Err(ExportError {
                exporter: self.name(),
                path,
                source,
            }),
        }
    }
}
