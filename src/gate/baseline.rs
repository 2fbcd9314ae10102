//! Baseline files (`lockbench baseline save`): a run's cells taken over their repetitions,
//! with the environment they were measured in, as JSON.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::GateError;
use super::aggregate::{CellAggregate, aggregate};
use super::current::RunResults;

/// Version of the baseline layout; `lockbench gate` refuses any other, and `lockbench baseline
/// upgrade` converts the older ones. 2: each cell's coordinates carry the server version.
pub const BASELINE_SCHEMA: u32 = 2;

/// A baseline: what `lockbench gate` compares a run with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// [`BASELINE_SCHEMA`].
    pub schema_version: u32,
    /// The lockbench version that saved it.
    pub lockbench_version: String,
    /// The run folder it was made from, as given.
    pub source: String,
    /// The run's `environment.json` (machine, kernel, Docker, git commit), when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<serde_json::Value>,
    /// Every cell of the run over its repetitions.
    pub cells: Vec<CellAggregate>,
}

impl Baseline {
    /// The baseline of the finished runs in `dirs`, their repetitions pooled: each run starts
    /// its clusters afresh, so several runs put the spread between clusters (leader placement,
    /// a JVM's warm-up) into the baseline's quartiles, which the repetitions of one run, all on
    /// one cluster, do not see.
    pub fn of_runs(dirs: &[PathBuf]) -> Result<Baseline, GateError> {
        let mut cells = Vec::new();
        let mut environment = None;
        for dir in dirs {
            let run = RunResults::read(dir)?;
            if run.cells.is_empty() {
                return Err(GateError::Input {
                    path: dir.to_path_buf(),
                    message: "the run has no finished cell: run `lockbench run --repeat N` to \
                              completion first"
                        .into(),
                });
            }
            environment = environment.or(run.environment);
            cells.extend(run.cells);
        }
        Ok(Baseline {
            schema_version: BASELINE_SCHEMA,
            lockbench_version: env!("CARGO_PKG_VERSION").to_string(),
            source: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            environment,
            cells: aggregate(&cells),
        })
    }

    /// Writes the baseline to `path` (making its folder).
    pub fn save(&self, path: &Path) -> Result<(), GateError> {
        let io = |e: std::io::Error| GateError::Input {
            path: path.to_path_buf(),
            message: format!("cannot write it: {e}"),
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        std::fs::write(path, text + "\n").map_err(io)
    }

    /// Reads the baseline at `path`, refusing another schema version.
    pub fn load(path: &Path) -> Result<Baseline, GateError> {
        let bad = |message: String| GateError::Input {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            bad(format!(
                "cannot read it: {e}; make one with `lockbench baseline save {}`",
                path.display()
            ))
        })?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not JSON: {e}; is it a lockbench baseline?")))?;
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(BASELINE_SCHEMA) => {}
            Some(v) => {
                return Err(GateError::Schema(format!(
                    "{}: baseline schema_version {v}, this lockbench reads {BASELINE_SCHEMA}: \
                     convert it (`lockbench baseline upgrade {}`) or save it again with this \
                     version (`lockbench baseline save {} --from <run>`)",
                    path.display(),
                    path.display(),
                    path.display()
                )));
            }
            None => return Err(bad("no schema_version: not a lockbench baseline".into())),
        }
        serde_json::from_value(value).map_err(|e| bad(format!("not a lockbench baseline: {e}")))
    }
}

/// A baseline of layout 1 (before cells carried a server version) in layout 2: every baseline
/// of layout 1 was measured on the images of Debian bookworm's packages (etcd 3.4, ZooKeeper
/// 3.8, Redis 7.0, ...), so each cell gets its system's bookworm version. A baseline whose
/// cells ran on images named by an override cannot be told apart: make it again instead.
pub fn upgrade_v1(mut value: serde_json::Value) -> Result<serde_json::Value, String> {
    use crate::system::{Release, System};
    let Some(cells) = value.get_mut("cells").and_then(|c| c.as_array_mut()) else {
        return Err("no cells: not a lockbench baseline".into());
    };
    for cell in cells {
        let id = cell
            .get_mut("id")
            .and_then(|i| i.as_object_mut())
            .ok_or("a cell without an id: not a lockbench baseline")?;
        let name = id
            .get("system")
            .and_then(|s| s.as_str())
            .ok_or("a cell id without a system")?;
        let system: System = name.parse().map_err(|e| format!("{e}"))?;
        let version = system
            .versions()
            .into_iter()
            .find(|v| v.release() == Release::Bookworm)
            .ok_or_else(|| format!("{system} has no version from Debian bookworm to give"))?;
        id.insert("version".into(), version.name().into());
        let full: crate::plan::CellId =
            serde_json::from_value(serde_json::Value::Object(id.clone()))
                .map_err(|e| format!("a cell id that does not read: {e}"))?;
        cell["cell"] = full.to_string().into();
    }
    value["schema_version"] = BASELINE_SCHEMA.into();
    Ok(value)
}

/// `lockbench baseline upgrade FILE`: rewrites a baseline of an older layout in this one, in
/// place; one already current is left as it is. Says what it did.
pub fn upgrade_file(path: &Path) -> Result<String, GateError> {
    let bad = |message: String| GateError::Input {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let upgraded = match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(BASELINE_SCHEMA) => {
            return Ok(format!("{}: already layout {v}", path.display()));
        }
        Some(1) => upgrade_v1(value).map_err(bad)?,
        Some(v) => {
            return Err(bad(format!(
                "baseline schema_version {v}, which this lockbench cannot convert: save it again \
                 with `lockbench baseline save`"
            )));
        }
        None => return Err(bad("no schema_version: not a lockbench baseline".into())),
    };
    let baseline: Baseline = serde_json::from_value(upgraded)
        .map_err(|e| bad(format!("the converted baseline does not read: {e}")))?;
    baseline.save(path)?;
    Ok(format!(
        "{}: converted from layout 1 to {BASELINE_SCHEMA} ({} cells, each at its system's \
         Debian bookworm version)",
        path.display(),
        baseline.cells.len()
    ))
}

/// The default run folder `--from` and `--current` read: `results/latest`.
pub fn latest_run() -> PathBuf {
    PathBuf::from("results").join("latest")
}
