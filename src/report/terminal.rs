//! The comparison table on stdout once the run is over, and where its files are.

use super::{ExportError, Exporter, RunReport};

/// Prints at the end of a run only (the progress display covers the cells as they finish).
pub struct Terminal;

impl Exporter for Terminal {
    fn name(&self) -> &'static str {
        "terminal"
    }

    fn run_updated(&self, run: &RunReport<'_>) -> Result<(), ExportError> {
        if run.finished {
            println!("{}", super::markdown::comparison_table(run.cells));
            println!("results: {}", run.dir.display());
        }
        Ok(())
    }
}
