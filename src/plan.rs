//! The expanded matrix of a run: system × strategy × workload × clients, validated before any
//! container starts.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::recipe::Strategy;
use crate::spec::{ClientsAs, Stop, Workload};
use crate::system::System;

/// One cell of the matrix: a workload at one client count on one system under one strategy.
#[derive(Debug, Clone)]
pub struct Cell {
    pub system: System,
    pub strategy: Strategy,
    /// The workload with any command-line overrides (clients, duration, seed) applied.
    pub workload: Workload,
}

impl Cell {
    /// The cell's coordinates.
    pub fn id(&self) -> CellId {
        CellId {
            system: self.system,
            strategy: self.strategy,
            workload: self.workload.name.clone(),
            chaos: NO_CHAOS.to_string(),
            clients: self.workload.clients,
        }
    }
}

/// The chaos coordinate of a cell with no fault schedule.
pub const NO_CHAOS: &str = "none";

fn no_chaos() -> String {
    NO_CHAOS.to_string()
}

/// The coordinates of one cell, stored in its summary: what results are compared on (the
/// regression gate keys baselines on it). Displayed as the cell's folder name,
/// `<system>-<strategy>-<workload>[-<chaos>]-c<clients>` (no chaos part without a schedule).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellId {
    /// The system the cell runs on.
    pub system: System,
    /// The waiting strategy.
    pub strategy: Strategy,
    /// The workload's name.
    pub workload: String,
    /// The fault schedule's name, `none` without one.
    #[serde(default = "no_chaos")]
    pub chaos: String,
    /// Concurrent clients.
    pub clients: u32,
}

impl CellId {
    /// The id of a cell that runs without faults.
    pub fn new(system: System, strategy: Strategy, workload: &str, clients: u32) -> CellId {
        CellId {
            system,
            strategy,
            workload: workload.to_string(),
            chaos: NO_CHAOS.to_string(),
            clients,
        }
    }
}

impl fmt::Display for CellId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.system, self.strategy, self.workload)?;
        if self.chaos != NO_CHAOS {
            write!(f, "-{}", self.chaos)?;
        }
        write!(f, "-c{}", self.clients)
    }
}

/// Everything a run will do, in order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub run_id: String,
    pub seed: Option<u64>,
    pub cells: Vec<Cell>,
    /// Combinations left out, with the reason (e.g. `native` on a system other than etcd).
    pub skipped: Vec<String>,
}

/// A plan that cannot run, or a `plan.toml` that cannot be read back, with the fix.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("nothing to run: {0}")]
    Empty(String),
    #[error("{origin}: not a lockbench plan: {message}")]
    Unreadable { origin: String, message: String },
}

/// One cell as `plan.toml` stores it: its coordinates and its workload in the workload file's
/// own syntax.
#[derive(Serialize, Deserialize)]
struct CellRow {
    id: String,
    system: System,
    strategy: Strategy,
    #[serde(default = "no_chaos")]
    chaos: String,
    workload: toml::Table,
}

#[derive(Serialize, Deserialize)]
struct PlanFile {
    run_id: String,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    skipped: Vec<String>,
    cells: Vec<CellRow>,
}

/// Command-line choices that override the workload files.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub strategies: Option<Vec<Strategy>>,
    pub clients: Option<Vec<u32>>,
    pub duration: Option<Duration>,
    pub seed: Option<u64>,
    /// Where clients run (`--clients-as`, `--clients-per-process`).
    pub clients_as: Option<ClientsOverride>,
}

/// `--clients-as` over a workload's `clients_as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientsOverride {
    /// Every cell's clients as tasks of the runner.
    Tasks,
    /// Every cell's clients as worker processes: `per_process` clients each, or, when `None`,
    /// as many as the workload says (1 if it said tasks).
    Processes { per_process: Option<u32> },
}

impl ClientsOverride {
    /// What `workload`'s clients run as under this override.
    pub fn apply(self, workload: ClientsAs) -> ClientsAs {
        match (self, workload) {
            (ClientsOverride::Tasks, _) => ClientsAs::Tasks,
            (
                ClientsOverride::Processes {
                    per_process: Some(n),
                },
                _,
            ) => ClientsAs::Processes { per_process: n },
            (ClientsOverride::Processes { per_process: None }, ClientsAs::Tasks) => {
                ClientsAs::Processes { per_process: 1 }
            }
            (ClientsOverride::Processes { per_process: None }, own) => own,
        }
    }
}

impl Plan {
    /// Expands systems × workloads × (strategies) × (clients). `native` applies to etcd only;
    /// elsewhere it is skipped with a note.
    pub fn expand(
        run_id: &str,
        systems: &[System],
        workloads: &[Workload],
        ov: &Overrides,
    ) -> Result<Plan, PlanError> {
        let mut cells = Vec::new();
        let mut skipped = Vec::new();
        for &system in systems {
            for wl in workloads {
                let strategies = ov
                    .strategies
                    .clone()
                    .unwrap_or_else(|| wl.strategies.clone());
                let clients = ov.clients.clone().unwrap_or_else(|| vec![wl.clients]);
                for &strategy in &strategies {
                    if !system.strategies().contains(&strategy) {
                        skipped.push(format!(
                            "{system}/{strategy}: {system} offers {}",
                            system.strategies_text()
                        ));
                        continue;
                    }
                    for &c in &clients {
                        let mut w = wl.clone();
                        w.clients = c;
                        if let Some(st) = w.stampede {
                            // Every client takes the lock once a round.
                            w.stop = Stop::Acquisitions(u64::from(st.rounds) * u64::from(c));
                        }
                        // A stampede's rounds end it: a duration would only cut its rounds
                        // short (the runner stops clients at the duration plus a grace).
                        if let Some(d) = ov.duration.filter(|_| w.stampede.is_none()) {
                            w.stop = Stop::Duration(d);
                            // Keep the warm-up a small part of a shortened run.
                            w.warmup = w.warmup.min(d / 5);
                        }
                        if let Some(s) = ov.seed {
                            w.seed = s;
                        }
                        if let Some(c) = ov.clients_as {
                            w.clients_as = c.apply(w.clients_as);
                        }
                        cells.push(Cell {
                            system,
                            strategy,
                            workload: w,
                        });
                    }
                }
            }
        }
        if cells.is_empty() {
            return Err(PlanError::Empty(format!(
                "no cell left after expansion ({}). Choose a strategy the systems offer",
                skipped.join("; ")
            )));
        }
        Ok(Plan {
            run_id: run_id.to_string(),
            seed: ov.seed,
            cells,
            skipped,
        })
    }

    /// The cells grouped by system, in plan order, so each cluster is started once.
    pub fn by_system(&self) -> Vec<(System, Vec<&Cell>)> {
        let mut out: Vec<(System, Vec<&Cell>)> = Vec::new();
        for c in &self.cells {
            match out.iter_mut().find(|(s, _)| *s == c.system) {
                Some((_, v)) => v.push(c),
                None => out.push((c.system, vec![c])),
            }
        }
        out
    }

    /// The resolved plan as written to `plan.toml`: each cell's workload in the workload
    /// file's syntax, so [`Plan::from_toml`] reads it back equal.
    pub fn to_toml(&self) -> String {
        let file = PlanFile {
            run_id: self.run_id.clone(),
            seed: self.seed,
            skipped: self.skipped.clone(),
            cells: self
                .cells
                .iter()
                .map(|c| CellRow {
                    id: c.id().to_string(),
                    system: c.system,
                    strategy: c.strategy,
                    chaos: NO_CHAOS.to_string(),
                    workload: c.workload.to_table(),
                })
                .collect(),
        };
        toml::to_string_pretty(&file)
            .unwrap_or_else(|e| format!("# plan could not be serialised: {e}\n"))
    }

    /// Reads a `plan.toml` back; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Plan, PlanError> {
        let bad = |message: String| PlanError::Unreadable {
            origin: origin.to_string(),
            message,
        };
        let file: PlanFile = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
        let cells = file
            .cells
            .into_iter()
            .map(|row| {
                let text = toml::to_string(&row.workload).map_err(|e| bad(e.to_string()))?;
                let workload = Workload::from_str(&text, &format!("{origin} cell {}", row.id))
                    .map_err(|e| bad(e.to_string()))?;
                Ok(Cell {
                    system: row.system,
                    strategy: row.strategy,
                    workload,
                })
            })
            .collect::<Result<Vec<_>, PlanError>>()?;
        Ok(Plan {
            run_id: file.run_id,
            seed: file.seed,
            cells,
            skipped: file.skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_toml_reads_back_equal() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let workloads: Vec<Workload> = ["hot-lock", "open-loop", "stampede", "zipf-keys"]
            .iter()
            .map(|n| Workload::from_file(&dir.join(format!("{n}.toml"))).unwrap())
            .collect();
        let ov = Overrides {
            clients: Some(vec![2, 8]),
            duration: Some(Duration::from_secs(7)),
            seed: Some(99),
            clients_as: Some(ClientsOverride::Processes {
                per_process: Some(3),
            }),
            ..Overrides::default()
        };
        let systems = [System::Etcd, System::Redlock];
        let plan = Plan::expand("r1", &systems, &workloads, &ov).unwrap();
        let text = plan.to_toml();
        assert!(!text.contains("Uniform {"), "no Rust Debug text:\n{text}");
        let back = Plan::from_toml(&text, "plan.toml").unwrap();
        assert_eq!(back.run_id, "r1");
        assert_eq!(back.seed, Some(99));
        assert_eq!(back.skipped, plan.skipped);
        assert_eq!(back.cells.len(), plan.cells.len());
        for (a, b) in plan.cells.iter().zip(&back.cells) {
            assert_eq!((a.system, a.strategy), (b.system, b.strategy));
            assert_eq!(a.workload, b.workload, "{}", a.id());
            assert_eq!(
                b.workload.clients_as,
                ClientsAs::Processes { per_process: 3 }
            );
            assert_eq!(a.id(), b.id());
        }
        let e = Plan::from_toml("cells = 3", "x/plan.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x/plan.toml: not a lockbench plan"), "{e}");
    }

    #[test]
    fn clients_as_override_keeps_a_workloads_own_process_size_unless_given() {
        let per = |n| ClientsAs::Processes { per_process: n };
        let keep = ClientsOverride::Processes { per_process: None };
        assert_eq!(keep.apply(ClientsAs::Tasks), per(1));
        assert_eq!(keep.apply(per(4)), per(4));
        let two = ClientsOverride::Processes {
            per_process: Some(2),
        };
        assert_eq!(two.apply(per(4)), per(2));
        assert_eq!(ClientsOverride::Tasks.apply(per(4)), ClientsAs::Tasks);
    }

    #[test]
    fn cell_ids_name_folders_and_chaos_only_when_there_is_one() {
        let mut id = CellId {
            system: System::Redis,
            strategy: Strategy::Herd,
            workload: "hot-lock".into(),
            chaos: NO_CHAOS.into(),
            clients: 16,
        };
        assert_eq!(id.to_string(), "redis-herd-hot-lock-c16");
        id.chaos = "kill-leader".into();
        assert_eq!(id.to_string(), "redis-herd-hot-lock-kill-leader-c16");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<CellId>(&json).unwrap(), id);
    }
}
