//! Chaos schedules (`chaos/*.toml`): which faults a cell suffers and when, as data. Read like
//! workload files (raw serde shapes → validation with errors naming the file, the field and the
//! valid values → [`Schedule`]), written back in the same syntax for `plan.toml` and
//! `cell.json`, and expanded into a seeded, reproducible [`Schedule::timeline`] for one cell.
//!
//! A schedule only says *what* should happen; the nemesis plays a timeline against a cluster
//! through [`crate::chaos::Faultable`] and heals everything at the end.

mod raw;
mod timeline;
mod validate;
mod write;

use std::path::Path;
use std::time::Duration;

use crate::chaos::Target;
pub use crate::chaos::client::ClientTarget;
pub use crate::chaos::shape::{SHAPES, Shape};
use crate::cluster::DataOnRestart;
use crate::recipe::Strategy;
use crate::spec::Expect;
use crate::system::System;

use super::{Expectations, SpecError, parse_error};

pub use timeline::PlannedFault;

/// The name of the schedule with no faults: cells without chaos carry it, and their folder
/// names leave it out.
pub const NO_CHAOS: &str = "none";

/// A validated chaos schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// Name used in cell ids and folder names (defaults to the file stem); `none` is reserved
    /// for the schedule with no faults.
    pub name: String,
    /// Seed of every random choice of the timeline (jitter, mixed kinds, target picks).
    pub seed: u64,
    /// The systems it applies to; `None` for every system. Others are skipped by the plan.
    pub systems: Option<Vec<System>>,
    /// The cluster size its cells need (e.g. 4 for the even split); `None` for each system's
    /// default. Systems that cannot run that size are skipped by the plan.
    pub cluster_size: Option<usize>,
    /// The verdicts its cells are expected to get; merged with the workload's, unsafe winning
    /// (`Cell::expect`), so only its `unsafe` entries change anything. `None` keeps the
    /// workload's.
    pub expect: Option<Expectations>,
    /// The faults, in file order.
    pub faults: Vec<FaultSpec>,
}

/// One `[[faults]]` entry: what, when, for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    /// What the fault does.
    pub kind: FaultKind,
    /// When it starts.
    pub timing: Timing,
    /// How long from its start to its end (the heal, restart or resume). A kill's file field
    /// is `restart_after` (how long the node stays down; 0 restarts it at once).
    pub duration: Duration,
}

/// When a fault starts, counted from the cell's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Once, at this offset (`start`).
    At(Duration),
    /// The n-th time (n = 1, 2, …) at n × `every` plus a seeded draw in `[0, jitter]`, for as
    /// long as the fault ends inside the cell. `jitter` ≤ `every`, so occurrences stay in order.
    Every {
        /// The interval.
        every: Duration,
        /// The largest seeded delay added to each occurrence.
        jitter: Duration,
    },
}

/// What a fault does, with its kind's parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Kill nodes (SIGKILL) and restart them after the fault's duration.
    Kill {
        /// `one`, `minority`, `majority` or `leader` (for Redlock: a master).
        target: Target,
        /// Whether the restarted nodes find their data again.
        data: DataOnRestart,
    },
    /// Cut the servers' network into a shape, then heal it.
    Partition {
        /// Which nodes stop hearing which.
        shape: Shape,
        /// Whether the clients are cut off with the servers' sides too (by default they keep
        /// reaching every node they reached before).
        clients: bool,
    },
    /// Freeze a server (`docker pause`), then resume it.
    PauseNode {
        /// `leader` or `one`.
        target: Target,
    },
    /// Stop a client's whole worker process (SIGSTOP: keep-alives and watchdogs included), then
    /// continue it: the GC pause. Needs clients running as worker processes.
    PauseClient {
        /// Which client.
        target: ClientTarget,
    },
    /// Skew one server's clock (Redis and Redlock expire keys by wall clock), then reset it.
    Clock {
        /// `leader` or `one`.
        target: Target,
        /// How the clock goes wrong.
        skew: ClockSkew,
    },
    /// Each occurrence draws one of these kinds from the schedule's seed (never `mixed` again).
    Mixed {
        /// The kinds drawn from, at least one.
        kinds: Vec<FaultKind>,
    },
}

/// How a clock fault skews a server's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockSkew {
    /// Jump forward by this much at once (`mode = "jump"`, `by`).
    Jump {
        /// The jump.
        by: Duration,
    },
    /// Run fast at this rate (`mode = "fast"`, `rate`; 2.0 is twice as fast).
    Fast {
        /// Clock seconds per real second, above 1.
        rate: f64,
    },
}

impl FaultKind {
    /// The kind's name, as chaos files, histories and reports write it.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Kill { .. } => "kill",
            FaultKind::Partition { .. } => "partition",
            FaultKind::PauseNode { .. } => "pause-node",
            FaultKind::PauseClient { .. } => "pause-client",
            FaultKind::Clock { .. } => "clock",
            FaultKind::Mixed { .. } => "mixed",
        }
    }

    /// Whether this kind, or one a `mixed` draws from, pauses client processes.
    pub fn pauses_clients(&self) -> bool {
        match self {
            FaultKind::PauseClient { .. } => true,
            FaultKind::Mixed { kinds } => kinds.iter().any(FaultKind::pauses_clients),
            _ => false,
        }
    }
}

/// The name a restart's data handling has in chaos files.
pub fn data_name(d: DataOnRestart) -> &'static str {
    match d {
        DataOnRestart::Keep => "keep",
        DataOnRestart::Wipe => "wipe",
    }
}

impl Schedule {
    /// The schedule of cells without faults.
    pub fn none() -> Schedule {
        Schedule {
            name: NO_CHAOS.to_string(),
            seed: 1,
            systems: None,
            cluster_size: None,
            expect: None,
            faults: Vec::new(),
        }
    }

    /// Reads and validates a schedule file; the name defaults to the file stem.
    pub fn from_file(path: &Path) -> Result<Schedule, SpecError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::ReadSchedule {
            origin: origin.clone(),
            source,
        })?;
        Schedule::from_str(&text, &origin)
    }

    /// Parses and validates schedule text; `origin` (a path or a label) names it in errors and
    /// gives the default name.
    #[allow(clippy::should_implement_trait)] // FromStr cannot carry the origin.
    pub fn from_str(text: &str, origin: &str) -> Result<Schedule, SpecError> {
        let raw: raw::RawSchedule =
            toml::from_str(text).map_err(|e| parse_error(origin, text, &e))?;
        validate::schedule(origin, raw)
    }

    /// True for a schedule without faults (`none`, or a named control with no faults).
    pub fn is_calm(&self) -> bool {
        self.faults.is_empty()
    }

    /// Why `system` cannot run this schedule's cells, or `None` when it can.
    pub fn unfit_for(&self, system: System) -> Option<String> {
        if let Some(systems) = &self.systems
            && !systems.contains(&system)
        {
            let names: Vec<&str> = systems.iter().map(|s| s.name()).collect();
            return Some(format!(
                "{system} × {}: the schedule applies to {} only",
                self.name,
                names.join(", ")
            ));
        }
        if let Some(n) = self.cluster_size
            && system.validate_size(n).is_err()
        {
            return Some(format!(
                "{system} × {}: the schedule needs {n} nodes, and {system} runs {}",
                self.name,
                system.facts().sizes_text
            ));
        }
        None
    }

    /// The cluster size `system` runs this schedule's cells on.
    pub fn size_for(&self, system: System) -> usize {
        self.cluster_size.unwrap_or_else(|| system.default_size())
    }

    /// The schedule's expected verdict for `system` × `strategy`, if it declares one.
    pub fn expect_for(&self, system: System, strategy: Strategy) -> Option<Expect> {
        self.expect.as_ref().map(|e| e.of(system, strategy))
    }

    /// Whether some fault pauses client processes (which needs clients as worker processes).
    pub fn pauses_clients(&self) -> bool {
        self.faults.iter().any(|f| f.kind.pauses_clients())
    }
}

#[cfg(test)]
mod tests;
