//! The expanded matrix of a run: system × strategy × workload × clients, validated before any
//! container starts.

use std::time::Duration;

use serde::Serialize;

use crate::recipe::Strategy;
use crate::spec::{Stop, Workload};
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
    /// `<system>-<strategy>-<workload>-c<clients>`: the cell's folder name.
    pub fn id(&self) -> String {
        cell_id(
            self.system,
            self.strategy,
            &self.workload.name,
            self.workload.clients,
        )
    }
}

/// The id a cell with these coordinates has.
pub fn cell_id(system: System, strategy: Strategy, workload: &str, clients: u32) -> String {
    format!("{system}-{strategy}-{workload}-c{clients}")
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

/// A plan that cannot run, with the fix.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("nothing to run: {0}")]
    Empty(String),
}

/// Command-line choices that override the workload files.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub strategies: Option<Vec<Strategy>>,
    pub clients: Option<Vec<u32>>,
    pub duration: Option<Duration>,
    pub seed: Option<u64>,
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
                    if strategy == Strategy::Native && system != System::Etcd {
                        skipped.push(format!(
                            "{system}/{strategy}: the native strategy exists on etcd only"
                        ));
                        continue;
                    }
                    for &c in &clients {
                        let mut w = wl.clone();
                        w.clients = c;
                        if let Some(d) = ov.duration {
                            w.stop = Stop::Duration(d);
                            // Keep the warm-up a small part of a shortened run.
                            w.warmup = w.warmup.min(d / 5);
                        }
                        if let Some(s) = ov.seed {
                            w.seed = s;
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
                "no cell left after expansion ({}). Choose a strategy the systems offer (herd, predecessor; native on etcd)",
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

    /// The resolved plan as written to `plan.toml`.
    pub fn to_toml(&self) -> String {
        #[derive(Serialize)]
        struct CellRow {
            id: String,
            system: System,
            strategy: Strategy,
            workload: String,
            clients: u32,
            keys: u32,
            stop: String,
            warmup: String,
            hold: String,
            think: String,
            arrival: String,
            lease_ttl: String,
            renew: bool,
            acquire_timeout: String,
            seed: u64,
        }
        #[derive(Serialize)]
        struct PlanFile {
            run_id: String,
            skipped: Vec<String>,
            cells: Vec<CellRow>,
        }
        let hd = |d: Duration| humantime::format_duration(d).to_string();
        let file = PlanFile {
            run_id: self.run_id.clone(),
            skipped: self.skipped.clone(),
            cells: self
                .cells
                .iter()
                .map(|c| {
                    let w = &c.workload;
                    CellRow {
                        id: c.id(),
                        system: c.system,
                        strategy: c.strategy,
                        workload: w.name.clone(),
                        clients: w.clients,
                        keys: w.keys,
                        stop: match w.stop {
                            Stop::Duration(d) => format!("duration {}", hd(d)),
                            Stop::Acquisitions(n) => format!("{n} acquisitions"),
                        },
                        warmup: hd(w.warmup),
                        hold: format!("{:?}", w.hold),
                        think: format!("{:?}", w.think),
                        arrival: format!("{:?}", w.arrival),
                        lease_ttl: hd(w.lease_ttl),
                        renew: w.renew,
                        acquire_timeout: hd(w.acquire_timeout),
                        seed: w.seed,
                    }
                })
                .collect(),
        };
        toml::to_string_pretty(&file)
            .unwrap_or_else(|e| format!("# plan could not be serialised: {e}\n"))
    }
}
