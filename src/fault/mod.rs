//! Fault kinds, after Jepsen's `nemesis/combined.clj` packages: each kind is one file (or one
//! folder, when it has pure logic of its own) holding everything about it, and the registry
//! below is the one list that names them.
//!
//! A kind's file holds:
//! - its **parameters**: the type its `[[faults]]` table is read into ([`Kind::PARAMETERS`], the
//!   fields it takes), its **validation** ([`Kind::read`]: errors name the file, the field and
//!   the fix) and how it is written back ([`Kind::write`]);
//! - its **one name** ([`Kind::NAME`]), in chaos files, in the history's `fault` events, in
//!   `summary.json`'s `faults` and in the reports;
//! - how it **starts** and how it is **undone**: [`Kind::resolve`] turns the parameters into a
//!   concrete [`Effect`] (which nodes, which workers) when the fault is due, and the effect's
//!   [`Effect::start`] and [`Effect::undo`] act on the [`Faultable`] seam;
//! - what the **report** says of it: [`Kind::REALISM`] (real or modelled) and, for a model, the
//!   words every place repeats (the clock's [`clock::MODEL`]).
//!
//! | kind | start | end (heal) | real or modelled |
//! |---|---|---|---|
//! | `kill` | SIGKILL the nodes | restart them, data kept or wiped; wait until they serve again | real |
//! | `pause-node` | `docker pause` the nodes | `docker unpause` | real |
//! | `partition` | iptables drops per [`Grudge`] ([`partition::shape`]: halves, isolate-leader, bridge, majorities-ring) | remove its cuts, keep the other partitions' | real |
//! | `clock` | cut every TTL under the cell's prefix by Δ (once, or every tick: fast) | stop the ticker; expired keys stay expired | modelled ([`clock::model`]); refused on ZooKeeper and etcd (monotonic leases) |
//! | `pause-client` | SIGSTOP worker processes ([`pause_client`] picks `holder` or `random`) | SIGCONT | real |
//! | `promote` | SIGKILL the primary, promote its replica ([`crate::cluster::Provider::promote`]) | restart the old primary, which rejoins as the new one's replica; wait until it serves | real; postgres and mariadb only |
//! | `slow` | raise the one-way delay of every client link (lockbench's relays between clients and servers) to `latency` (+ `latency_jitter`) | put back the workload's `client_latency` | real (a real delay on the real connections; it slows the client side, not the links between servers) |
//! | `mixed` | each occurrence draws one of its kinds from the schedule's seed | the drawn kind's | the drawn kind's |
//!
//! **What a new fault kind touches:** its file here (parameters, validation, name, start, undo,
//! realism), plus one line in the `registry!` list below. Nothing else: the schedule file
//! (`nemesis/schedule/`) reads any registered kind's fields and writes them back, the nemesis
//! (`nemesis/`) plays and heals any [`Fault`], and the checkers and reports read windows by the
//! kind's name. (Tried with a throw-away kind taking a new parameter: it compiled and read,
//! wrote back and played with those two changes; the one test that failed pins the whole
//! "valid kinds are ..." message in `nemesis/schedule/tests.rs`, which then lists the new kind too.)
//! A kind that needs a new *primitive* (a way to act on a server that [`Faultable`] lacks)
//! adds it to [`Faultable`] with a default, and implements it for the cluster. Docs: its row
//! in the table above and in docs/book/src/chaos.md.
//!
//! Layering: this module is the vocabulary; `nemesis::schedule` reads a schedule's timing and hands
//! each fault's table to [`read`]; `nemesis` keeps the books and plays the timeline.

#[macro_use]
mod registry;
mod faultable;
mod params;
pub mod target;

use std::time::Duration;

pub use clock::{
    ClockAccess, ClockEffect, ClockError, ClockSkew, Cut, Realism, Skew, Ticker, TickerTotals,
};
pub use faultable::{Faultable, REJOIN_TIMEOUT, wait_until};
pub use kill::RedlockRestart;
pub use params::{DAY, Param, ParamSource, ParamType, Params, valid_kinds};
pub use partition::{Grudge, Shape};
pub use pause_client::{ClientTarget, PickError, WorkerProcesses, pick_worker};
pub use registry::{
    Ctx, Effect, Entry, Kind, Refusal, Scene, entry, on_each_node, plain_kinds, read, write,
};
pub use slow::{ClientLinks, MAX_SLOW};
pub use target::{Target, TargetError, resolve};

use crate::cluster::ClusterError;

registry! {
    kill::Kill => Killed,
    partition::Partition => Partitioned,
    pause_node::PauseNode => PausedNodes,
    pause_client::PauseClient => PausedClients,
    clock::Clock => Skewed,
    mixed::Mixed => Undrawn,
    promote::Promote => Promoted,
    slow::Slow => Slowed,
}

/// A fault that could not be started or undone.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// A node fault failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// A worker could not be paused or resumed (the runner's words).
    #[error("{0}")]
    Worker(String),
    /// A clock cut failed.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// A client pause with no worker processes to pause.
    #[error(
        "client pause: the nemesis has no worker processes (Faults::with_workers); run the cell's clients as `lockbench worker` processes"
    )]
    NoWorkers,
    /// A `slow` fault with no relays between the clients and servers to slow.
    #[error(
        "slow: the cell's clients do not run behind lockbench's latency relays (the runner starts them for a cell whose schedule slows clients, or whose workload sets client_latency)"
    )]
    NoLinks,
    /// A real clock fault, which needs a faked clock in the server image.
    #[error(
        "clock fault: only the modelled clock is available (Debian's libfaketime 0.9.10 stops redis-server at start-up); set the fault's realism to modelled"
    )]
    RealClock,
}

/// What starting a fault reported beyond success.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Started {
    /// Per node, what the start did where the kind says it node by node (the clock model's
    /// first cut on each server).
    pub clock: Vec<(String, ClockEffect)>,
    /// What the start did, in the kind's words, for the fault's end event and the window's
    /// `effect`; `None` for faults that need no words.
    pub effect: Option<String>,
}

impl Started {
    /// True when some node refused its part while another took it.
    pub fn partial(&self) -> bool {
        self.clock
            .iter()
            .any(|(_, c)| matches!(c, ClockEffect::Refused { .. }))
    }

    /// What the start did, for the fault's end event (see [`Started::effect`]).
    pub fn describe(&self) -> Option<String> {
        self.effect.clone()
    }
}

/// What ending a fault found beyond success: how long each restarted node took to serve its
/// cluster again, and the nodes that did not within [`REJOIN_TIMEOUT`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    /// Restarted nodes that serve again, with the time from their restart.
    pub rejoined: Vec<(String, Duration)>,
    /// Why each node that did not serve again in time did not.
    pub not_rejoined: Vec<String>,
}

#[cfg(test)]
mod tests;
