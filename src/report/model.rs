//! What the exporters render from, loaded once: [`RunView`], the run folder as the reports see
//! it (the cells' summaries and the run's record, the environment, the plan, the capacity
//! report, the plots and what the plots are drawn from), and [`CellView`], one finished cell.
//!
//! Loading is the only file reading of the exporters; everything after it is pure. Files the
//! exporters make in the same pass (the plots and their index, drawn before the reports show
//! them) are laid over the view with [`RunView::add`], so a report shows the folder as it will
//! be once written, without reading back what was just rendered.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::RunReport;
use super::plot_index::{INDEX_FILE, PLOTS_DIR, PlotIndex, SVG_INLINE_MAX_BYTES};
use super::writer::OutFile;
use crate::capacity::Capacity;
use crate::check::CellResult;
use crate::environment::RunEnvironment;
use crate::history::Event;
use crate::plan::Plan;
use crate::results::CellSummary;

/// A run folder as the reports see it. `dir` names files (and gives the page its title); no
/// renderer opens anything under it.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The run folder.
    pub dir: PathBuf,
    /// Summaries of the finished cells, in plan order.
    pub cells: Vec<CellSummary>,
    /// Ids of planned cells that did not run (known once the run is over).
    pub not_run: Vec<String>,
    /// The planned cells that could not run, each with why.
    pub failed: Vec<crate::results::FailedCell>,
    /// Ctrl-C or SIGTERM ended the run.
    pub interrupted: bool,
    /// False after each cell, true once at the very end.
    pub finished: bool,
    /// `environment.json` and `clusters/*.json`.
    pub environment: RunEnvironment,
    /// `plan.toml`.
    pub plan: StoredPlan,
    /// `capacity.json`: `None` when the run has none, an error (its file and why) when it does
    /// not read.
    pub capacity: Result<Option<Capacity>, String>,
    /// `plots/`: the index and the images.
    pub plots: StoredPlots,
    /// Each cell's `acquire.hgrm` text, by cell id (cells without one are absent).
    pub histograms: BTreeMap<String, String>,
    /// Each library cell's `driver.json`, by cell id (absent where it does not read).
    pub drivers: BTreeMap<String, crate::results::DriverRecord>,
    /// The histories of the cells whose plots are not all in `plots/` (drawn again from
    /// them), by cell id; an error names the file and why it did not read.
    pub histories: BTreeMap<String, Result<Vec<Event>, String>>,
}

/// A run's `plan.toml`, as the reports show it.
#[derive(Debug, Clone, Default)]
pub enum StoredPlan {
    /// The run folder has none.
    #[default]
    Absent,
    /// It exists but could not be read: its path and why.
    Unreadable(String),
    /// Its text, and the plan it holds (or why it does not parse).
    Stored {
        /// The file as written.
        text: String,
        /// The plan, or the parser's message.
        plan: Result<Plan, String>,
    },
}

/// A run's `plots/` folder: the index, why it could not be read, and the images.
#[derive(Debug, Clone, Default)]
pub struct StoredPlots {
    /// `plots/index.json` (empty when absent or unreadable).
    pub index: PlotIndex,
    /// Why `plots/index.json` could not be read, if it could not.
    pub problem: Option<String>,
    /// Every image file of `plots/` by file name; an SVG's PNG twin is held only when the
    /// report may show it: the SVG is missing, empty or larger than
    /// [`SVG_INLINE_MAX_BYTES`] (see [`super::plot_index::shows_svg`]).
    pub images: BTreeMap<String, Vec<u8>>,
    /// Every file name in `plots/`, images read or not (what the plots exporter needs to know
    /// to leave a cell's existing plots alone).
    pub names: BTreeSet<String>,
}

impl StoredPlots {
    /// Takes in the file `name` of the plots folder `plots`: the index is parsed, an image
    /// kept.
    fn add(&mut self, plots: &Path, name: &str, bytes: Vec<u8>) {
        self.names.insert(name.to_string());
        if name == INDEX_FILE {
            match PlotIndex::parse(&bytes, &plots.join(name)) {
                Ok(index) => (self.index, self.problem) = (index, None),
                Err(e) => (self.index, self.problem) = (PlotIndex::default(), Some(e.to_string())),
            }
        } else {
            self.images.insert(name.to_string(), bytes);
        }
    }
}

impl RunView {
    /// A run in `dir` that has recorded nothing yet: no cell, no file (what a test builds on).
    pub fn empty(dir: &Path) -> RunView {
        RunView {
            dir: dir.to_path_buf(),
            cells: Vec::new(),
            not_run: Vec::new(),
            failed: Vec::new(),
            interrupted: false,
            finished: false,
            environment: RunEnvironment {
                machine: Err(crate::environment::NOT_RECORDED.to_string()),
                clusters: Vec::new(),
                problems: Vec::new(),
            },
            plan: StoredPlan::Absent,
            capacity: Ok(None),
            plots: StoredPlots::default(),
            histograms: BTreeMap::new(),
            drivers: BTreeMap::new(),
            histories: BTreeMap::new(),
        }
    }

    /// Loads what the reports of `run` show from its folder `run.dir`. Never fails: a file that
    /// cannot be read is kept as the reason, said where its content would be.
    pub fn load(run: &RunReport<'_>) -> RunView {
        let dir = run.dir;
        let mut view = RunView {
            dir: dir.to_path_buf(),
            cells: run.cells.to_vec(),
            not_run: run.not_run.to_vec(),
            failed: run.failed.to_vec(),
            interrupted: run.interrupted,
            finished: run.finished,
            environment: RunEnvironment::read(dir),
            plan: load_plan(dir),
            capacity: crate::capacity::file::read(dir).map_err(|e| e.to_string()),
            plots: load_plots(dir),
            ..RunView::empty(dir)
        };
        for cell in run.cells {
            let id = cell.id.to_string();
            let cell_dir = dir.join("cells").join(&id);
            if let Ok(text) = std::fs::read_to_string(cell_dir.join(super::hgrm::ACQUIRE_FILE)) {
                view.histograms.insert(id.clone(), text);
            }
            if cell.id.library.is_some()
                && let Some(record) = std::fs::read_to_string(cell_dir.join("driver.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
            {
                view.drivers.insert(id.clone(), record);
            }
            if super::plots::cell_plots_missing(&view.plots.names, cell) {
                view.histories.insert(id, load_history(&cell_dir));
            }
        }
        view
    }

    /// Lays `files` (made by an exporter in this pass, not yet written) over the view: those
    /// under `plots/` replace what was loaded from there.
    pub fn add(&mut self, files: &[OutFile]) {
        let plots = self.dir.join(PLOTS_DIR);
        for f in files {
            if let Ok(name) = f.path.strip_prefix(&plots) {
                self.plots
                    .add(&plots, &name.to_string_lossy(), f.bytes.clone());
            }
        }
    }

    /// The run folder's name, as the page's title says it.
    pub fn name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.dir.display().to_string())
    }
}

fn load_plan(dir: &Path) -> StoredPlan {
    let path = dir.join("plan.toml");
    match std::fs::read_to_string(&path) {
        Ok(text) => StoredPlan::Stored {
            plan: Plan::from_toml(&text, "plan.toml").map_err(|e| e.to_string()),
            text,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => StoredPlan::Absent,
        Err(e) => StoredPlan::Unreadable(format!("{}: {e}", path.display())),
    }
}

/// The files of `dir/plots/`: the index and every SVG; a PNG only where its SVG is missing,
/// empty or over [`SVG_INLINE_MAX_BYTES`], as only then may a report show it.
fn load_plots(dir: &Path) -> StoredPlots {
    let plots = dir.join(PLOTS_DIR);
    let names = std::fs::read_dir(&plots)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut out = StoredPlots {
        names,
        ..StoredPlots::default()
    };
    // The SVG small enough to be shown whatever its PNG weighs.
    let svg_shown = |stem: &str| {
        std::fs::metadata(plots.join(format!("{stem}.svg")))
            .is_ok_and(|m| m.len() > 0 && m.len() <= SVG_INLINE_MAX_BYTES as u64)
    };
    for name in out.names.clone() {
        if name.strip_suffix(".png").is_some_and(svg_shown) {
            continue;
        }
        match std::fs::read(plots.join(&name)) {
            Ok(bytes) => out.add(&plots, &name, bytes),
            Err(e) if name == INDEX_FILE => {
                out.problem = Some(PlotIndex::error(&plots.join(&name), e).to_string());
            }
            // An image that cannot be read is said missing where the report shows it.
            Err(_) => {}
        }
    }
    out
}

fn load_history(cell_dir: &Path) -> Result<Vec<Event>, String> {
    crate::history::read_history(&cell_dir.join(crate::results::HISTORY_FILE))
        .map_err(|e| e.to_string())
}

/// One finished cell as the cell exporters see it: where its folder is (for names only), its
/// result, and its history (an error names the file and why it did not read).
#[derive(Debug)]
pub struct CellView<'a> {
    /// The cell's folder, `<run>/cells/<id>`.
    pub dir: &'a Path,
    /// The cell evaluated.
    pub result: &'a CellResult,
    /// Its `history.jsonl`, read once.
    pub events: Result<Vec<Event>, String>,
}

impl<'a> CellView<'a> {
    /// Loads the history of the cell in `dir`.
    pub fn load(dir: &'a Path, result: &'a CellResult) -> CellView<'a> {
        CellView {
            dir,
            result,
            events: load_history(dir),
        }
    }

    /// The run folder the cell belongs to (a cell folder is `<run>/cells/<id>`).
    pub fn run_dir(&self) -> Option<&'a Path> {
        self.dir.parent().and_then(Path::parent)
    }
}
