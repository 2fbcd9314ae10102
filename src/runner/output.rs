//! The results folder of a run: `plan.toml`, `cells/<id>/{history.jsonl, acquire.hgrm,
//! summary.json}` written as each cell finishes, and the run's `summary.json` and `report.md`,
//! rewritten after every cell so an interrupted run still has them. `results/latest` points at
//! the newest run.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::cluster::ClusterInfo;
use crate::plan::{Cell, Plan, cell_id};
use crate::stats::{Analysis, CellSummary, SCHEMA_VERSION};

/// A run's output folder.
#[derive(Debug, Clone)]
pub struct RunFolder {
    path: PathBuf,
}

/// The id a finished cell's summary belongs to.
pub(crate) fn summary_id(s: &CellSummary) -> String {
    cell_id(s.system, s.strategy, &s.workload, s.clients)
}

impl RunFolder {
    /// Creates `<base>/<UTC timestamp>-<name>/` (base: `results/` by default) and points
    /// `<base>/latest` at it.
    pub fn create(base: Option<&Path>, name: &str) -> anyhow::Result<RunFolder> {
        let base = base
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("results"));
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace([':', '-'], "");
        let path = base.join(format!("{stamp}-{name}"));
        std::fs::create_dir_all(path.join("cells"))
            .with_context(|| format!("creating the results folder {}", path.display()))?;
        let latest = base.join("latest");
        let _ = std::fs::remove_file(&latest);
        #[cfg(unix)]
        {
            let _ = std::os::unix::fs::symlink(path.file_name().unwrap_or_default(), &latest);
        }
        Ok(RunFolder { path })
    }

    /// The folder itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn write_plan(&self, plan: &Plan) -> anyhow::Result<()> {
        write(&self.path.join("plan.toml"), &plan.to_toml())
    }

    pub(crate) fn write_cluster(&self, info: &ClusterInfo) -> anyhow::Result<()> {
        let dir = self.path.join("clusters");
        std::fs::create_dir_all(&dir)?;
        write(
            &dir.join(format!("{}.json", info.system)),
            &serde_json::to_string_pretty(info)?,
        )
    }

    pub(crate) fn cell_dir(&self, cell: &Cell) -> anyhow::Result<PathBuf> {
        let dir = self.path.join("cells").join(cell.id());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    pub(crate) fn write_cell(&self, cell: &Cell, analysis: &Analysis) -> anyhow::Result<()> {
        let dir = self.cell_dir(cell)?;
        write(
            &dir.join("summary.json"),
            &serde_json::to_string_pretty(&analysis.summary)?,
        )?;
        crate::stats::write_hgrm_file(&analysis.acquire, &dir.join("acquire.hgrm"))
            .with_context(|| format!("writing {}", dir.join("acquire.hgrm").display()))
    }

    /// Rewrites the run summary from every cell finished so far (the cell folders are the record).
    pub(crate) fn refresh_run_summary(&self) -> anyhow::Result<()> {
        let mut all = self.read_cell_summaries()?;
        all.sort_by_key(summary_id);
        self.write_run_summary(&all, &[], false)
    }

    /// Every finished cell's summary, read back from its folder.
    pub(crate) fn read_cell_summaries(&self) -> anyhow::Result<Vec<CellSummary>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(self.path.join("cells"))? {
            let p = entry?.path().join("summary.json");
            if let Ok(text) = std::fs::read_to_string(&p) {
                out.push(
                    serde_json::from_str(&text)
                        .with_context(|| format!("reading {}", p.display()))?,
                );
            }
        }
        Ok(out)
    }

    pub(crate) fn write_run_summary(
        &self,
        cells: &[CellSummary],
        not_run: &[String],
        interrupted: bool,
    ) -> anyhow::Result<()> {
        #[derive(Serialize)]
        struct RunSummary<'a> {
            schema_version: u32,
            interrupted: bool,
            not_run: &'a [String],
            cells: &'a [CellSummary],
        }
        let s = RunSummary {
            schema_version: SCHEMA_VERSION,
            interrupted,
            not_run,
            cells,
        };
        write(
            &self.path.join("summary.json"),
            &serde_json::to_string_pretty(&s)?,
        )?;
        let mut md = String::from("# lockbench report\n\n");
        md.push_str(&crate::report::markdown::comparison_table(cells));
        if interrupted || !not_run.is_empty() {
            md.push_str(&format!(
                "\n{}Cells not run: {}\n",
                if interrupted {
                    "The run was interrupted. "
                } else {
                    ""
                },
                if not_run.is_empty() {
                    "none".to_string()
                } else {
                    not_run.join(", ")
                }
            ));
        }
        write(&self.path.join("report.md"), &md)
    }
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
