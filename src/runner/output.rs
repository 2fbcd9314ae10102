//! The layout of a run's results folder: `plan.toml`, `environment.json` (what the run ran
//! on), `clusters/<system>.json` (or
//! `<system>-n<size>.json` for a cluster at a schedule's `cluster_size`), and
//! `cells/<id>/` with `history.jsonl` and `cell.json` (what the history does not say); the
//! exporters (`report/`) add their files to the cell and run folders. `results/latest` points
//! at the newest run.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::cluster::ClusterInfo;
use crate::environment::Environment;
use crate::plan::{Cell, Plan};
use crate::results::floor::HandoffFloor;
use crate::results::{CellInfo, CellSummary};

/// A run's output folder.
#[derive(Debug, Clone)]
pub struct RunFolder {
    path: PathBuf,
}

/// The id a finished cell's summary belongs to (its folder name).
pub(crate) fn summary_id(s: &CellSummary) -> String {
    s.id.to_string()
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

    /// Writes `environment.json`: what the run ran on, so its report stands on its own.
    pub(crate) fn write_environment(&self, env: &Environment) -> anyhow::Result<()> {
        write(
            &self.path.join(crate::environment::ENVIRONMENT_FILE),
            &serde_json::to_string_pretty(env)?,
        )
    }

    pub(crate) fn write_cluster(&self, info: &ClusterInfo, size: usize) -> anyhow::Result<()> {
        let dir = self.path.join("clusters");
        std::fs::create_dir_all(&dir)?;
        // A run may start one system at two versions, at two sizes (a schedule's cluster_size)
        // or at two delays between its nodes (peer_latency): one file each.
        let mut name = info.system.to_string();
        if info.version != info.system.default_version().name() {
            name.push_str(&format!("@{}", info.version));
        }
        if size != info.system.default_size() {
            name.push_str(&format!("-n{size}"));
        }
        if let Some(us) = info.peer_latency_us {
            let label = crate::plan::latency_label(std::time::Duration::from_micros(us));
            name.push_str(&format!("-peer{label}"));
        }
        let name = format!("{name}.json");
        write(&dir.join(name), &serde_json::to_string_pretty(info)?)
    }

    /// `clusters/<system>.json` as given: what a run on a target records of it.
    pub(crate) fn write_cluster_record(
        &self,
        system: crate::system::System,
        record: &serde_json::Value,
    ) -> anyhow::Result<()> {
        let dir = self.path.join("clusters");
        std::fs::create_dir_all(&dir)?;
        write(
            &dir.join(format!("{system}.json")),
            &serde_json::to_string_pretty(record)?,
        )
    }

    pub(crate) fn cell_dir(&self, cell: &Cell) -> anyhow::Result<PathBuf> {
        let dir = self.path.join("cells").join(cell.id().to_string());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }

    /// Writes `cell.json` (what the history does not say) into the cell's folder, so the
    /// cell can be evaluated again from the folder alone.
    pub(crate) fn write_cell_info(
        &self,
        cell: &Cell,
        info: &CellInfo,
        floor: Option<&HandoffFloor>,
    ) -> anyhow::Result<()> {
        #[derive(Serialize)]
        struct CellFile<'a> {
            /// The results schema it belongs to, which `check::evaluate` checks.
            schema_version: u32,
            #[serde(flatten)]
            info: &'a CellInfo,
            /// The handoff floor of the cell's cluster, measured before its cells.
            #[serde(skip_serializing_if = "Option::is_none")]
            handoff_floor: Option<&'a HandoffFloor>,
            /// The cell's workload, in the workload file's syntax.
            workload_spec: toml::Table,
            /// The cell's chaos schedule, in the chaos file's syntax; absent without chaos.
            #[serde(skip_serializing_if = "Option::is_none")]
            chaos_spec: Option<toml::Table>,
        }
        let dir = self.cell_dir(cell)?;
        let file = CellFile {
            schema_version: crate::results::SCHEMA_VERSION,
            info,
            handoff_floor: floor,
            workload_spec: cell.workload.to_table(),
            chaos_spec: (cell.chaos != crate::nemesis::schedule::Schedule::none())
                .then(|| cell.chaos.to_table()),
        };
        write(
            &dir.join(crate::results::CELL_FILE),
            &serde_json::to_string_pretty(&file)?,
        )
    }

    /// Every finished cell's summary, read back from its folder.
    /// Records that `cell` could not run: its folder gets [`crate::results::ERROR_FILE`] with
    /// the whole reason (a failed cluster's node log lines included), and the run's summary
    /// lists it with the reason's first line.
    pub(crate) fn write_cell_failure(
        &self,
        cell: &Cell,
        why: &str,
    ) -> anyhow::Result<crate::results::FailedCell> {
        let dir = self.cell_dir(cell)?;
        write(
            &dir.join(crate::results::ERROR_FILE),
            &format!("cell {} did not run to its end: {why}\n", cell.id()),
        )?;
        Ok(crate::results::FailedCell {
            id: cell.id().to_string(),
            reason: why.lines().next().unwrap_or("").to_string(),
        })
    }

    pub(crate) fn read_cell_summaries(&self) -> anyhow::Result<Vec<CellSummary>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(self.path.join("cells"))? {
            let p = entry?.path().join(crate::results::SUMMARY_FILE);
            if let Ok(text) = std::fs::read_to_string(&p) {
                out.push(
                    serde_json::from_str(&text)
                        .with_context(|| format!("reading {}", p.display()))?,
                );
            }
        }
        Ok(out)
    }
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
