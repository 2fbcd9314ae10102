//! Baseline files (`lockbench baseline save`): a run's cells taken over their repetitions,
//! with the environment they were measured in, as JSON.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::GateError;
use super::aggregate::{CellAggregate, aggregate};
use super::current::RunResults;

/// Version of the baseline layout; `lockbench gate` refuses any other.
pub const BASELINE_SCHEMA: u32 = 1;

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
                    "{}: baseline schema_version {v}, this lockbench reads {BASELINE_SCHEMA}: save \
                     the baseline again with this version (`lockbench baseline save {} --from \
                     <run>`)",
                    path.display(),
                    path.display()
                )));
            }
            None => return Err(bad("no schema_version: not a lockbench baseline".into())),
        }
        serde_json::from_value(value).map_err(|e| bad(format!("not a lockbench baseline: {e}")))
    }
}

/// The default run folder `--from` and `--current` read: `results/latest`.
pub fn latest_run() -> PathBuf {
    PathBuf::from("results").join("latest")
}
