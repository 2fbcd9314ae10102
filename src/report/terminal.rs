//! The comparison table on stdout once the run is over, and where its files are. Not an
//! exporter: it makes no file. [`super::Exporters`] with `print` (`lockbench run`) and
//! `lockbench check` print [`text`].

use std::path::Path;

use crate::results::CellSummary;

/// The comparison table of `cells`, a line for each cell not paced as asked
/// ([`super::pacing::lines`]), then the run folder `dir`.
pub fn text(dir: &Path, cells: &[CellSummary]) -> String {
    let pacing: String = super::pacing::lines(cells)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    format!(
        "{}\n{pacing}results: {}\n",
        super::markdown::comparison_table(cells),
        dir.display()
    )
}
