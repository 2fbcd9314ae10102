//! Exporters: turn a finished cell, and the run so far, into files people and tools read. Each
//! format is one file behind the [`Exporter`] trait (hyperfine's `export/`, criterion's
//! `Report` with default no-op hooks), and each is a pure renderer: it takes a loaded view
//! ([`model::CellView`], [`model::RunView`]) and returns its files as bytes. The runner calls
//! every exporter of an [`Exporters`] list as each cell finishes and after every cell, so an
//! interrupted run still has its reports; [`Exporters`] loads each view once and hands every
//! exporter's files to [`writer`], the one place that writes them.
//!
//! The reports, Markdown and HTML, format one list of sections ([`sections::sections`]).

pub mod findings;
pub mod hgrm;
pub mod html;
pub mod json;
pub mod kind_tables;
pub mod libraries;
pub mod markdown;
pub mod model;
pub mod pacing;
pub mod plot_index;
pub mod plots;
pub mod rates;
pub mod rebuild;
pub mod sections;
pub mod table;
pub mod terminal;
pub mod versions;
pub mod writer;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::check::CellResult;
use crate::check::folder::{ResultsWriter, WriteError};
use crate::results::CellSummary;
use model::{CellView, RunView};
use writer::OutFile;

/// What the runner hands the exporters after each cell: the run folder and every cell finished
/// so far ([`RunView::load`] reads the rest of the folder from it).
#[derive(Debug, Clone, Copy)]
pub struct RunReport<'a> {
    /// The run's folder.
    pub dir: &'a Path,
    /// Summaries of the finished cells, in plan order.
    pub cells: &'a [CellSummary],
    /// Ids of planned cells that did not run (known once the run is over).
    pub not_run: &'a [String],
    /// Planned cells that could not run, each with why (also listed in `not_run`).
    pub failed: &'a [crate::results::FailedCell],
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

/// Renders one format.
///
/// Contract: a hook returns the files of its format, as paths and bytes, from the view it is
/// given; it reads no file and writes none (the [`writer`] does), and a hook an exporter does
/// not need keeps its default, which makes no file.
pub trait Exporter: Send + Sync {
    /// A short name, used in errors.
    fn name(&self) -> &'static str;

    /// A cell finished: its files (in its folder `cell.dir`, or the run's `plots/`). Called once
    /// per cell.
    fn cell_files(&self, _cell: &CellView<'_>) -> Result<Vec<OutFile>, ExportError> {
        Ok(Vec::new())
    }

    /// The finished cells changed (after every cell) or the run ended (`run.finished`): the
    /// run-level files. `run` holds what the exporters before this one made in the same pass.
    fn run_files(&self, _run: &RunView) -> Result<Vec<OutFile>, ExportError> {
        Ok(Vec::new())
    }
}

/// Several exporters called in order, each one's files written before the next renders;
/// the first failure stops the fan-out and is returned. With `print`, the comparison table goes
/// to stdout once the run has finished.
pub struct Exporters {
    /// The exporters, in the order they render.
    pub list: Vec<Box<dyn Exporter>>,
    /// Print the comparison table and where the files are at the end of a run.
    pub print: bool,
}

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
            failed: &[],
            interrupted: false,
            finished,
        })?)
    }
}

impl Exporters {
    /// What `lockbench run` writes: `summary.json` (cell and run), `acquire.hgrm`, the
    /// [`reports`](Exporters::reports), and the comparison table on stdout at the end.
    pub fn standard() -> Exporters {
        Exporters {
            print: true,
            ..Self::files_only()
        }
    }

    /// The standard files without printing anything (tests, `lockbench check --write`).
    pub fn files_only() -> Exporters {
        let mut list: Vec<Box<dyn Exporter>> = vec![Box::new(json::Json), Box::new(hgrm::Hgrm)];
        list.extend(Self::reports().list);
        Exporters { list, print: false }
    }

    /// The files made for people to read (the plots, `report.md`, `report.html`), which
    /// `lockbench report DIR` draws again from stored results without touching the results
    /// themselves. The plots come first: the reports show what `plots/index.json` lists.
    pub fn reports() -> Exporters {
        Exporters {
            list: vec![
                Box::new(plots::Plots),
                Box::new(markdown::Markdown),
                Box::new(html::Html),
            ],
            print: false,
        }
    }

    /// Loads the cell in `dir` once and writes every exporter's [`Exporter::cell_files`].
    pub fn cell_finished(&self, dir: &Path, cell: &CellResult) -> Result<(), ExportError> {
        if self.list.is_empty() {
            return Ok(());
        }
        let view = CellView::load(dir, cell);
        self.list
            .iter()
            .try_for_each(|e| writer::write(e.name(), &e.cell_files(&view)?))
    }

    /// Loads the run once and writes every exporter's [`Exporter::run_files`], each laid over
    /// the view for the exporters after it; then prints, if asked.
    pub fn run_updated(&self, run: &RunReport<'_>) -> Result<(), ExportError> {
        if !self.list.is_empty() {
            let mut view = RunView::load(run);
            for e in &self.list {
                let files = e.run_files(&view)?;
                writer::write(e.name(), &files)?;
                view.add(&files);
            }
        }
        if self.print && run.finished {
            print!("{}", terminal::text(run.dir, run.cells));
        }
        Ok(())
    }
}
