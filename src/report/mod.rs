//! Exporters: turn a finished cell, and the run so far, into files people and tools read. Each
//! format is one file behind the [`Exporter`] trait (hyperfine's `export/`, criterion's
//! `Report` with default no-op hooks); the runner calls every exporter of an [`Exporters`] list
//! as each cell finishes and after every cell, so an interrupted run still has its reports.

pub mod hgrm;
pub mod html;
pub mod json;
pub mod markdown;
pub mod plot_index;
pub mod plots;
pub mod rebuild;
pub mod sections;
pub mod table;
pub mod terminal;

use std::path::{Path, PathBuf};

use crate::check::CellResult;
use crate::check::folder::{ResultsWriter, WriteError};
use crate::results::CellSummary;

/// What a run-level exporter sees: every cell finished so far.
#[derive(Debug, Clone, Copy)]
pub struct RunReport<'a> {
    /// The run's folder.
    pub dir: &'a Path,
    /// Summaries of the finished cells, in plan order.
    pub cells: &'a [CellSummary],
    /// Ids of planned cells that did not run (known once the run is over).
    pub not_run: &'a [String],
    /// Ctrl-C or SIGTERM ended the run.
    pub interrupted: bool,
    /// False after each cell, true once at the very end.
    pub finished: bool,
}

/// A file an exporter could not write.
#[derive(Debug, thiserror::Error)]
#[error(
    "{exporter}: writing {path}: {source} (check that the results folder is writable and the disk has room)"
)]
pub struct ExportError {
    /// The exporter's name.
    pub exporter: &'static str,
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub source: std::io::Error,
}

/// Writes one format.
///
/// Contract: hooks only write files (or print); they never change the results they are given,
/// and a hook an exporter does not need keeps its default, which does nothing.
pub trait Exporter: Send + Sync {
    /// A short name, used in errors.
    fn name(&self) -> &'static str;

    /// A cell finished: write its files into its folder `dir`. Called once per cell.
    fn cell_finished(&self, _dir: &Path, _cell: &CellResult) -> Result<(), ExportError> {
        Ok(())
    }

    /// The finished cells changed (after every cell) or the run ended (`run.finished`): rewrite
    /// the run-level files.
    fn run_updated(&self, _run: &RunReport<'_>) -> Result<(), ExportError> {
        Ok(())
    }
}

/// Several exporters called in order; the first failure stops the fan-out and is returned.
pub struct Exporters(pub Vec<Box<dyn Exporter>>);

/// How `lockbench check --write` and `lockbench capacity` redraw a run folder: the run-level
/// files of a run that is not interrupted and had no cell left out.
impl ResultsWriter for Exporters {
    fn write_cell(&self, dir: &Path, result: &CellResult) -> Result<(), WriteError> {
        Ok(self.cell_finished(dir, result)?)
    }

    fn write_run(
        &self,
        dir: &Path,
        cells: &[CellSummary],
        finished: bool,
    ) -> Result<(), WriteError> {
        Ok(self.run_updated(&RunReport {
            dir,
            cells,
            not_run: &[],
            interrupted: false,
            finished,
        })?)
    }
}

impl Exporters {
    /// What `lockbench run` writes: `summary.json` (cell and run), `acquire.hgrm`, the
    /// [`reports`](Exporters::reports), and the comparison table on stdout at the end.
    pub fn standard() -> Exporters {
        let mut all = Self::files_only();
        all.0.push(Box::new(terminal::Terminal));
        all
    }

    /// The standard files without printing anything (tests, `lockbench check --write`).
    pub fn files_only() -> Exporters {
        let mut all: Vec<Box<dyn Exporter>> = vec![Box::new(json::Json), Box::new(hgrm::Hgrm)];
        all.extend(Self::reports().0);
        Exporters(all)
    }

    /// The files made for people to read (the plots, `report.md`, `report.html`), which
    /// `lockbench report DIR` draws again from stored results without touching the results
    /// themselves. The plots come first: the reports show what `plots/index.json` lists.
    pub fn reports() -> Exporters {
        Exporters(vec![
            Box::new(plots::Plots),
            Box::new(markdown::Markdown),
            Box::new(html::Html),
        ])
    }

    /// Calls every exporter's [`Exporter::cell_finished`].
    pub fn cell_finished(&self, dir: &Path, cell: &CellResult) -> Result<(), ExportError> {
        self.0.iter().try_for_each(|e| e.cell_finished(dir, cell))
    }

    /// Calls every exporter's [`Exporter::run_updated`].
    pub fn run_updated(&self, run: &RunReport<'_>) -> Result<(), ExportError> {
        self.0.iter().try_for_each(|e| e.run_updated(run))
    }
}

/// Writes `text` to `path`, naming `exporter` in the error.
pub(crate) fn write_file(
    exporter: &'static str,
    path: &Path,
    text: &str,
) -> Result<(), ExportError> {
    std::fs::write(path, text).map_err(|source| ExportError {
        exporter,
        path: path.to_path_buf(),
        source,
    })
}
