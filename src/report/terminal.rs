//! The comparison table on stdout once the run is over, and where its files are. Not an
//! exporter: it makes no file. [`super::Exporters`] with `print` (`lockbench run`) and
//! `lockbench check` print [`text`].

use std::path::Path;

use crate::results::CellSummary;

/// The comparison table of `cells`, then the run folder `dir`.
pub fn text(dir: &Path, cells: &[CellSummary]) -> String {
    format!(
        "{}\nresults: {}\n",
        super::markdown::comparison_table(cells),
        dir.display()
    )
}
