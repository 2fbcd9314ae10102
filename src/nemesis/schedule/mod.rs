//! Chaos schedules (`chaos/*.toml`): which faults a cell suffers and when, as data. Read like
//! workload files (raw serde shapes → validation with errors naming the file, the field and the
//! valid values → [`Schedule`]), written back in the same syntax for `plan.toml` and
//! `cell.json`, and expanded into a seeded, reproducible [`Schedule::timeline`] for one cell.
//!
//! The schedule reads its own fields and each fault's timing; a fault's kind and parameters are
//! read by the kind's file in [`crate::fault`] through [`Params`], and written back by it, so
//! this module names no kind. A schedule only says *what* should happen; the nemesis
//! ([`crate::nemesis`]) plays its timeline against a cluster through
//! [`crate::fault::Faultable`] and heals everything at the end. (The timeline stays here, not
//! in `nemesis`: the schedule's tests read it, and `spec` would import `nemesis` back.)

mod params;
mod raw;
mod timeline;
mod validate;
mod write;

use std::path::Path;
use std::time::Duration;

pub use crate::fault::FaultKind;
use crate::recipe::Strategy;
use crate::system::System;
use crate::workload::Expect;

use crate::workload::{Expectations, SpecError, parse_error};

pub use crate::fault::{Param, ParamType, Params};
pub use timeline::PlannedFault;

/// A chaos file's top-level fields, and the timing fields every `[[faults]]` table takes besides
/// `kind` and its kind's parameters: what the guide's chaos reference must list.
pub fn file_fields() -> (&'static [&'static str], &'static [&'static str]) {
    raw::file_fields()
}

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
    /// Why the systems not in `systems` are left out (`skipped_because`), said in the plan's
    /// skip line; only with `systems`.
    pub skipped_because: Option<String>,
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

impl Schedule {
    /// The schedule of cells without faults.
    pub fn none() -> Schedule {
        Schedule {
            name: NO_CHAOS.to_string(),
            seed: 1,
            systems: None,
            skipped_because: None,
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

    /// Every primitive its faults act through, in name order ([`FaultKind::primitives`]).
    pub fn primitives(&self) -> Vec<&'static str> {
        let mut all: Vec<&'static str> = self
            .faults
            .iter()
            .flat_map(|f| f.kind.primitives())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Why `system` cannot run this schedule's cells, or `None` when it can.
    pub fn unfit_for(&self, system: System) -> Option<String> {
        if let Some(systems) = &self.systems
            && !systems.contains(&system)
        {
            let names: Vec<&str> = systems.iter().map(|s| s.name()).collect();
            let why = self
                .skipped_because
                .as_ref()
                .map(|w| format!(": {w}"))
                .unwrap_or_default();
            return Some(format!(
                "{system} × {}: the schedule applies to {} only{why}",
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

    /// Whether some fault slows the client links (which needs the clients behind relays).
    pub fn slows_clients(&self) -> bool {
        self.faults.iter().any(|f| f.kind.slows_clients())
    }
}

#[cfg(test)]
mod tests;
