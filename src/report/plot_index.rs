//! `plots/index.json`: the list of plots the plots exporter drew into a run's `plots/` folder,
//! the seam between the exporter that draws them and the reports that show them (report.html
//! inlines every listed plot with its title and caption, as its SVG or its PNG: see
//! [`shows_svg`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ExportError;
use super::writer::OutFile;

/// The folder of a run that holds the plots and their index.
pub const PLOTS_DIR: &str = "plots";
/// The index's file name inside [`PLOTS_DIR`].
pub const INDEX_FILE: &str = "index.json";

/// The largest SVG report.html inlines whatever its PNG weighs, bytes. A figure of a few
/// hundred elements (fairness, the herd's curves) stays under it; one with thousands of points
/// or bars (a busy cell's latency over time or safety timeline) weighs hundreds of KB as SVG
/// and costs the browser a DOM node per element, where its PNG is a few tens of KB.
pub const SVG_INLINE_MAX_BYTES: usize = 32 * 1024;

/// Whether report.html shows a plot as its SVG of `svg_bytes` rather than its PNG of
/// `png_bytes` (`None`: no PNG to show): the SVG when it is at most
/// [`SVG_INLINE_MAX_BYTES`] or no larger than the PNG, else the PNG.
pub fn shows_svg(svg_bytes: usize, png_bytes: Option<usize>) -> bool {
    svg_bytes <= SVG_INLINE_MAX_BYTES || png_bytes.is_none_or(|png| svg_bytes <= png)
}

/// Every plot of a run, in the order the reports show them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlotIndex {
    /// The plots, run-level and per cell.
    pub plots: Vec<PlotEntry>,
}

/// One plot, drawn twice (SVG and PNG) into [`PLOTS_DIR`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlotEntry {
    /// What the plot shows: `latency-distribution`, `herd-wakeups`, `herd-handoff`,
    /// `herd-throughput`, `capacity`, `fairness` (run-level), `latency-over-time`, `safety-timeline` (per cell).
    pub kind: String,
    /// The figure's title.
    pub title: String,
    /// One line on how to read it.
    pub caption: String,
    /// The SVG file's name, relative to [`PLOTS_DIR`].
    pub svg: String,
    /// The PNG file's name, relative to [`PLOTS_DIR`].
    pub png: String,
    /// The cell id (its folder name under `cells/`) for a per-cell plot; `None` for a
    /// run-level one.
    pub cell: Option<String>,
}

impl PlotEntry {
    /// The HTML id of the plot's figure: `<kind>-<cell>` for a cell's plot, `<kind>` for a
    /// run-level one (so `#safety-timeline-<cell>` links to a cell's timeline).
    pub fn anchor(&self) -> String {
        match &self.cell {
            Some(cell) => format!("{}-{cell}", self.kind),
            None => self.kind.clone(),
        }
    }
}

impl PlotIndex {
    /// The index's path in the run folder `run_dir`.
    pub fn path(run_dir: &Path) -> PathBuf {
        run_dir.join(PLOTS_DIR).join(INDEX_FILE)
    }

    /// Reads `run_dir/plots/index.json`; an empty index when the file is absent (a run folder
    /// written before plots existed). A file that cannot be read or parsed is an error naming it.
    pub fn read(run_dir: &Path) -> Result<PlotIndex, ExportError> {
        let path = Self::path(run_dir);
        match std::fs::read(&path) {
            Ok(bytes) => Self::parse(&bytes, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PlotIndex::default()),
            Err(e) => Err(Self::error(&path, e)),
        }
    }

    /// The index in `bytes`, the content of the file `path` (named in the error).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<PlotIndex, ExportError> {
        serde_json::from_slice(bytes).map_err(|e| {
            Self::error(
                path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "not a plot index ({e}); `lockbench report DIR` draws the plots and writes it again"
                    ),
                ),
            )
        })
    }

    /// An error about the index file `path`: `source` says what went wrong.
    pub fn error(path: &Path, source: std::io::Error) -> ExportError {
        ExportError {
            exporter: "plots",
            path: path.to_path_buf(),
            source,
        }
    }

    /// The index as the file `run_dir/plots/index.json`, for the writer.
    pub fn to_file(&self, run_dir: &Path) -> Result<OutFile, ExportError> {
        let path = Self::path(run_dir);
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Self::error(&path, std::io::Error::other(e)))?;
        Ok(OutFile::new(path, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_agreed_json_and_an_absent_file_as_empty() {
        let dir = std::env::temp_dir().join(format!("lockbench-plot-index-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(PlotIndex::read(&dir).unwrap(), PlotIndex::default());

        std::fs::create_dir_all(dir.join(PLOTS_DIR)).unwrap();
        std::fs::write(
            PlotIndex::path(&dir),
            r#"{ "plots": [ { "kind": "latency-distribution", "title": "T", "caption": "C",
                 "svg": "latency-distribution.svg", "png": "latency-distribution.png",
                 "cell": null },
               { "kind": "safety-timeline", "title": "S", "caption": "D",
                 "svg": "c1.safety-timeline.svg", "png": "c1.safety-timeline.png",
                 "cell": "c1" } ] }"#,
        )
        .unwrap();
        let index = PlotIndex::read(&dir).unwrap();
        assert_eq!(index.plots.len(), 2);
        assert_eq!(index.plots[0].anchor(), "latency-distribution");
        assert_eq!(index.plots[1].anchor(), "safety-timeline-c1");
        assert_eq!(index.plots[1].cell.as_deref(), Some("c1"));

        crate::report::writer::write("plots", &[index.to_file(&dir).unwrap()]).unwrap();
        assert_eq!(PlotIndex::read(&dir).unwrap(), index);

        std::fs::write(PlotIndex::path(&dir), "{ not json").unwrap();
        let e = PlotIndex::read(&dir).unwrap_err().to_string();
        assert!(
            e.contains("index.json") && e.contains("lockbench report"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
