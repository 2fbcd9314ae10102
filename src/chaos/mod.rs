//! The nemesis' vocabulary: faults as verb pairs, the [`Target`]s they hit, partition shapes,
//! and the bookkeeping that undoes every one of them. A fault acts through [`Faultable`], which
//! a real [`Cluster`] implements (and a test double can), and client pauses through the cell's
//! [`WorkerControl`]. Fault kinds (docs/faults.md says the same for users):
//!
//! | kind | start | end (heal) | real or modelled |
//! |---|---|---|---|
//! | `kill` | SIGKILL the nodes | restart them, data kept or wiped | real |
//! | `pause-node` | `docker pause` the nodes | `docker unpause` | real |
//! | `partition` | iptables drops per [`Grudge`] ([`shape`]: halves, isolate-leader, bridge, majorities-ring) | remove its cuts, keep the other partitions' | real |
//! | `clock` | cut every TTL under the cell's prefix by Δ (once, or every tick: fast) | stop the ticker; expired keys stay expired | modelled ([`clock`]); ZooKeeper and etcd report monotonic leases |
//! | `pause-client` | SIGSTOP worker processes ([`client`] picks `holder` or `random`) | SIGCONT | real |
//!
//! Every fault started through [`Faults`] is undone by [`Faults::heal_all`] at the end of a cell,
//! newest first; a fault whose undoing failed stays listed, so calling it again retries, and a
//! heal with nothing left to undo does nothing. Should a run end early, dropping the cluster
//! removes its containers (and with them every partition rule and paused process), dropping
//! [`Faults`] stops every fast clock, and dropping the workers kills them.
//!
//! Fault schedules (`chaos/*.toml`) are played on this seam by the [`nemesis`].

pub mod client;
pub mod clock;
pub mod nemesis;
pub mod partition;
pub mod restart;
pub mod shape;
pub mod target;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use client::{ClientTarget, PickError, pick_worker};
pub use clock::{ClockAccess, ClockEffect, ClockError, ClockSkew, Cut, Realism, TickerTotals};
pub use nemesis::{Books, Nemesis};
pub use partition::Grudge;
pub use restart::RedlockRestart;
pub use shape::Shape;
pub use target::{Target, TargetError, resolve};

use crate::cluster::{Cluster, ClusterError, DataOnRestart, NodeRole, NodeState};
use crate::runner::{WorkerControl, WorkerError};
use crate::system::System;

/// What faults act on: a cluster's servers by name.
///
/// Contract: every method returns once the change is in effect (or failed); `heal` removes every
/// partition rule; `restart` and `resume` of a node that is already running do nothing, so an
/// undo can be repeated.
pub trait Faultable: Sync {
    /// The server names faults may target, in a stable order.
    fn servers(&self) -> Vec<String>;
    /// The current leader's name, if there is one (for Redlock, which has none, a master).
    fn leader(&self) -> impl Future<Output = Result<Option<String>, ClusterError>>;
    /// Kills `node` (SIGKILL).
    fn kill(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Starts a killed `node` again.
    fn restart(
        &self,
        node: &str,
        data: DataOnRestart,
    ) -> impl Future<Output = Result<(), ClusterError>>;
    /// Freezes `node`.
    fn pause(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Thaws `node`.
    fn resume(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Cuts every link `grudge` names (on top of the cuts already made).
    fn partition(&self, grudge: &Grudge) -> impl Future<Output = Result<(), ClusterError>>;
    /// Nodes that are no server but stand beside one and share its side of a partition, as
    /// `(server, companion)` pairs: each Redis server's Sentinel. None by default.
    fn companions(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Removes every partition.
    fn heal(&self) -> impl Future<Output = Result<(), ClusterError>>;
    /// Removes the cuts of `grudge` and keeps those of other partitions still in effect (two
    /// windows may overlap when a start is slow). By default every partition is removed.
    fn heal_partition(&self, grudge: &Grudge) -> impl Future<Output = Result<(), ClusterError>> {
        let _ = grudge;
        self.heal()
    }
    /// How a clock fault reaches `node`: a Redis server, or monotonic leases that ignore it.
    fn clock(&self, node: &str) -> Result<ClockAccess, ClusterError>;
    /// One check that `node` serves its cluster now (after a restart): `Err` says why not.
    /// Every node serves by default (a test double with nothing to rejoin).
    fn serving(&self, node: &str) -> impl Future<Output = Result<(), String>> {
        let _ = node;
        std::future::ready(Ok(()))
    }
    /// One check that the whole cluster is healthy (every node up, one leader): `Err` says
    /// what is not. Healthy by default.
    fn healthy(&self) -> impl Future<Output = Result<(), String>> {
        std::future::ready(Ok(()))
    }
}

/// How long a restarted node may take to serve its cluster again before its fault's end is
/// recorded as `info` (a Redis master killed and restarted is turned into a replica by
/// Sentinel 13 s or so after the kill; an etcd member that rejoins empty must fetch a snapshot).
pub const REJOIN_TIMEOUT: Duration = Duration::from_secs(45);
/// How often a node that is not yet serving is asked again.
const REJOIN_POLL: Duration = Duration::from_millis(200);

/// Polls `check` until it holds, or `timeout` passes: `Ok` with how long it took, or the last
/// reason it gave.
pub async fn wait_until<F, Fut>(timeout: Duration, mut check: F) -> Result<Duration, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let started = Instant::now();
    loop {
        // A probe that hangs past the deadline is cut off: every call has a deadline.
        let left = timeout.saturating_sub(started.elapsed());
        let last = match tokio::time::timeout(left.max(REJOIN_POLL), check()).await {
            Ok(Ok(())) => return Ok(started.elapsed()),
            Ok(Err(why)) => why,
            Err(_) => "the check did not answer in time".to_string(),
        };
        if started.elapsed() >= timeout {
            return Err(last);
        }
        tokio::time::sleep(REJOIN_POLL).await;
    }
}

impl Faultable for Cluster {
    fn servers(&self) -> Vec<String> {
        Cluster::servers(self)
            .map(|n| n.name().to_string())
            .collect()
    }
    async fn leader(&self) -> Result<Option<String>, ClusterError> {
        if self.system().facts().leaderless {
            // No leader: `leader` faults hit the first master that is up (reproducibly).
            return Ok(Cluster::servers(self)
                .find(|n| n.state() == NodeState::Running)
                .map(|n| n.name().to_string()));
        }
        Cluster::leader(self).await
    }
    async fn kill(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::kill(self, node).await
    }
    async fn restart(&self, node: &str, data: DataOnRestart) -> Result<(), ClusterError> {
        Cluster::restart(self, node, data).await
    }
    async fn pause(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::pause(self, node).await
    }
    async fn resume(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::resume(self, node).await
    }
    async fn partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        Cluster::partition_grudge(self, grudge).await
    }
    fn companions(&self) -> Vec<(String, String)> {
        // Sentinel i watches from beside Redis server i, so a split decides what each
        // Sentinel sees of the master, and a failover follows the split.
        let sentinels: Vec<String> = self
            .nodes()
            .iter()
            .filter(|n| n.role() == NodeRole::Sentinel)
            .map(|n| n.name().to_string())
            .collect();
        Cluster::servers(self)
            .map(|n| n.name().to_string())
            .zip(sentinels)
            .collect()
    }
    async fn heal(&self) -> Result<(), ClusterError> {
        Cluster::heal(self).await
    }
    async fn heal_partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        Cluster::heal_grudge(self, grudge).await
    }
    async fn serving(&self, node: &str) -> Result<(), String> {
        Cluster::serving(self, node).await
    }
    async fn healthy(&self) -> Result<(), String> {
        Cluster::healthy(self).await
    }
    fn clock(&self, node: &str) -> Result<ClockAccess, ClusterError> {
        let n = self.node(node)?;
        if n.role() != NodeRole::Server {
            return Err(ClusterError::Fault {
                node: node.to_string(),
                error: "a clock fault targets servers; this node holds no lock keys".into(),
            });
        }
        Ok(clock_access(self.system(), n.endpoint()))
    }
}

/// How a clock fault reaches a server of `system` at `endpoint`: Redis and Redlock expire keys
/// by wall clock; ZooKeeper sessions and etcd leases run on monotonic time.
pub fn clock_access(system: System, endpoint: String) -> ClockAccess {
    system.service().clock_access(endpoint)
}

/// A fault that could not be started or undone.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// A node fault failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// A worker could not be paused or resumed.
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// A clock cut failed.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// A client pause with no worker processes to pause.
    #[error(
        "client pause: the nemesis has no worker processes (Faults::with_workers); run the cell's clients as `lockbench worker` processes"
    )]
    NoWorkers,
    /// A real clock fault, which needs a faked clock in the server image.
    #[error(
        "clock fault: only the modelled clock is available (Debian's libfaketime 0.9.10 stops redis-server at start-up); set the fault's realism to modelled"
    )]
    RealClock,
}

/// A fault as a verb pair: what starting it did, so that ending it undoes exactly that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Killed these nodes; the end restarts them.
    Kill {
        /// The killed nodes.
        nodes: Vec<String>,
        /// What a restart does with their data.
        data: DataOnRestart,
    },
    /// Paused these nodes; the end resumes them.
    Pause {
        /// The paused nodes.
        nodes: Vec<String>,
    },
    /// Cut these links; the end heals every partition.
    Partition {
        /// The cut links.
        grudge: Grudge,
    },
    /// Moved these servers' clocks forward (modelled: TTLs cut); the end stops a fast clock.
    Clock {
        /// The servers whose clocks move.
        nodes: Vec<String>,
        /// One jump, or a clock running fast.
        skew: ClockSkew,
        /// The cell's key prefix: only keys under it are touched.
        prefix: String,
        /// [`Realism::Modelled`]; a real clock is refused with [`FaultError::RealClock`].
        realism: Realism,
    },
    /// Stopped these worker processes (SIGSTOP); the end lets them go on (SIGCONT).
    PauseClients {
        /// Worker indexes, as [`WorkerControl`] numbers them.
        workers: Vec<usize>,
    },
}

impl Fault {
    /// The fault's kind, as chaos files, histories and reports name it (one name each).
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Kill { .. } => "kill",
            Fault::Pause { .. } => "pause-node",
            Fault::Partition { .. } => "partition",
            Fault::Clock { .. } => "clock",
            Fault::PauseClients { .. } => "pause-client",
        }
    }

    /// Whether the fault is the real thing or a model of its effect.
    pub fn realism(&self) -> Realism {
        match self {
            Fault::Clock { realism, .. } => *realism,
            _ => Realism::Real,
        }
    }

    /// Every server the fault touches (none for a client pause).
    pub fn nodes(&self) -> Vec<String> {
        match self {
            Fault::Kill { nodes, .. } | Fault::Pause { nodes } | Fault::Clock { nodes, .. } => {
                nodes.clone()
            }
            Fault::Partition { grudge } => grudge.nodes(),
            Fault::PauseClients { .. } => Vec::new(),
        }
    }

    /// The worker processes the fault touches (client pauses only).
    pub fn workers(&self) -> &[usize] {
        match self {
            Fault::PauseClients { workers } => workers,
            _ => &[],
        }
    }
}

/// What starting a fault reported beyond success.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Started {
    /// Per node of a clock fault, what the (first) jump did.
    pub clock: Vec<(String, ClockEffect)>,
}

impl Started {
    /// True when some node refused its part while another took it.
    pub fn partial(&self) -> bool {
        self.clock
            .iter()
            .any(|(_, c)| matches!(c, ClockEffect::Refused { .. }))
    }

    /// What the start did, for the fault's end event: the clock model's effect per node
    /// (`partial: ` first when a node refused); `None` for faults that need no words.
    pub fn describe(&self) -> Option<String> {
        if self.clock.is_empty() {
            return None;
        }
        let nodes: Vec<String> = self.clock.iter().map(|(n, c)| c.describe(n)).collect();
        Some(format!(
            "{}{MODEL}; {}",
            if self.partial() { "partial: " } else { "" },
            nodes.join("; ")
        ))
    }
}

/// What the clock fault is, in one line every report repeats: it is modelled.
pub const MODEL: &str = "modelled: no server clock is changed; on each targeted Redis master every \
TTL under the cell's key prefix is cut by the jump and keys with less left are deleted (a fast \
clock repeats this every tick); the end only stops the ticks, nothing is set back";

/// What ending a fault found beyond success: how long each restarted node took to serve its
/// cluster again, and the nodes that did not within [`REJOIN_TIMEOUT`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    /// Restarted nodes that serve again, with the time from their restart.
    pub rejoined: Vec<(String, Duration)>,
    /// Why each node that did not serve again in time did not.
    pub not_rejoined: Vec<String>,
}

/// A fault in effect, with the fast clock that runs until it ends.
#[derive(Debug)]
struct Active {
    fault: Fault,
    ticker: Option<clock::Ticker>,
}

/// The faults in effect on one cluster (and its cell's workers), so every one of them is undone.
#[derive(Debug, Default)]
pub struct Faults {
    active: Vec<Active>,
    workers: Option<WorkerControl>,
    ticks: Arc<Mutex<TickerTotals>>,
    /// How long a restarted node may take to serve again; `None` for [`REJOIN_TIMEOUT`].
    rejoin_timeout: Option<Duration>,
}

impl Faults {
    /// Bookkeeping that can also pause the cell's worker processes.
    pub fn with_workers(workers: WorkerControl) -> Faults {
        Faults {
            workers: Some(workers),
            ..Faults::default()
        }
    }

    /// The same bookkeeping, waiting at most `timeout` for a restarted node to serve again.
    pub fn rejoin_within(self, timeout: Duration) -> Faults {
        Faults {
            rejoin_timeout: Some(timeout),
            ..self
        }
    }

    /// Starts `fault` on `on` and remembers it, even if starting it failed half-way (some
    /// nodes may already be killed or paused). The fault is listed before it starts, so a start
    /// cancelled half-way (its future dropped) is still undone by [`Faults::heal_all`].
    pub async fn start<C: Faultable>(
        &mut self,
        on: &C,
        fault: Fault,
    ) -> Result<Started, FaultError> {
        self.active.push(Active {
            fault: fault.clone(),
            ticker: None,
        });
        let (r, ticker) = self.start_one(on, &fault).await;
        if let Some(a) = self.active.last_mut() {
            a.ticker = ticker;
        }
        r
    }

    /// Starts `fault`; a fast clock's ticker is returned even when a later step failed, so
    /// it is stopped with the fault.
    async fn start_one<C: Faultable>(
        &self,
        on: &C,
        fault: &Fault,
    ) -> (Result<Started, FaultError>, Option<clock::Ticker>) {
        let mut started = Started::default();
        let mut ticker = None;
        let r: Result<(), FaultError> = async {
            match fault {
                Fault::Kill { nodes, .. } => {
                    for n in nodes {
                        on.kill(n).await?;
                    }
                }
                Fault::Pause { nodes } => {
                    for n in nodes {
                        on.pause(n).await?;
                    }
                }
                Fault::Partition { grudge } => on.partition(grudge).await?,
                Fault::Clock {
                    nodes,
                    skew,
                    prefix,
                    realism,
                } => {
                    if *realism != Realism::Modelled {
                        return Err(FaultError::RealClock);
                    }
                    clock::prefix_pattern(prefix)?;
                    let mut endpoints = Vec::new();
                    // Each node on its own: a replica that refuses the cut leaves the others'
                    // cuts in effect, and the start is partial, not failed.
                    let mut first_refusal = None;
                    for n in nodes {
                        match on.clock(n)? {
                            ClockAccess::Monotonic => {
                                started.clock.push((n.clone(), ClockEffect::Monotonic))
                            }
                            ClockAccess::Redis { endpoint } => {
                                match clock::jump(&endpoint, prefix, skew.jump()).await {
                                    Ok(cut) => {
                                        started.clock.push((n.clone(), ClockEffect::Modelled(cut)));
                                        endpoints.push(endpoint);
                                    }
                                    Err(e) => {
                                        let text = e.to_string();
                                        started.clock.push((
                                            n.clone(),
                                            ClockEffect::Refused { error: text },
                                        ));
                                        first_refusal.get_or_insert(e);
                                    }
                                }
                            }
                        }
                    }
                    // Nothing took: the fault did not start.
                    if let Some(e) = first_refusal
                        && started
                            .clock
                            .iter()
                            .all(|(_, c)| matches!(c, ClockEffect::Refused { .. }))
                    {
                        return Err(e.into());
                    }
                    if let ClockSkew::Fast { every, jump } = *skew
                        && !endpoints.is_empty()
                    {
                        ticker = Some(clock::Ticker::spawn(
                            endpoints,
                            prefix.clone(),
                            every,
                            jump,
                            self.ticks.clone(),
                        ));
                    }
                }
                Fault::PauseClients { workers } => {
                    let control = self.workers.as_ref().ok_or(FaultError::NoWorkers)?;
                    for &w in workers {
                        control.pause(w)?;
                    }
                }
            }
            Ok(())
        }
        .await;
        (r.map(|()| started), ticker)
    }

    async fn end_one<C: Faultable>(&self, on: &C, a: &Active) -> Result<Ended, FaultError> {
        if let Some(t) = &a.ticker {
            t.stop().await;
        }
        let mut ended = Ended::default();
        match &a.fault {
            Fault::Kill { nodes, data } => {
                for n in nodes {
                    on.restart(n, *data).await?;
                }
                // Started is not rejoined: the end is only `ok` once each node serves again.
                let timeout = self.rejoin_timeout.unwrap_or(REJOIN_TIMEOUT);
                for n in nodes {
                    match wait_until(timeout, || on.serving(n)).await {
                        Ok(took) => ended.rejoined.push((n.clone(), took)),
                        Err(why) => ended.not_rejoined.push(format!(
                            "{n} did not serve its cluster within {:.1} s of its restart: {why}",
                            timeout.as_secs_f64()
                        )),
                    }
                }
            }
            Fault::Pause { nodes } => {
                for n in nodes {
                    on.resume(n).await?;
                }
            }
            Fault::Partition { grudge } => on.heal_partition(grudge).await?,
            // A jumped clock is not set back: the keys it expired stay expired, as on a real
            // server; stopping the ticker is all a fast clock needs.
            Fault::Clock { .. } => {}
            Fault::PauseClients { workers } => {
                let Some(control) = self.workers.as_ref() else {
                    return Ok(ended); // its start failed for this reason: nothing was paused
                };
                for &w in workers {
                    match control.resume(w) {
                        // An exited worker has nothing left to resume.
                        Ok(()) | Err(WorkerError::Gone { .. }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Ok(ended)
    }

    /// Ends the most recent fault still in effect (kept for a retry if ending it fails).
    pub async fn end_last<C: Faultable>(&mut self, on: &C) -> Result<Ended, FaultError> {
        match self.active.len() {
            0 => Ok(Ended::default()),
            n => self.end_at(on, n - 1).await,
        }
    }

    /// Ends the fault at `index` (oldest first, as [`Faults::active`] lists them); it stays
    /// listed until its undo succeeded, so a failed or cancelled undo is retried by
    /// [`Faults::heal_all`]. An index past the end does nothing. A node that restarted but did
    /// not serve its cluster in time is no failure of the undo (restarting it again would not
    /// help): it is reported in [`Ended::not_rejoined`].
    pub async fn end_at<C: Faultable>(
        &mut self,
        on: &C,
        index: usize,
    ) -> Result<Ended, FaultError> {
        let Some(a) = self.active.get(index) else {
            return Ok(Ended::default());
        };
        let ended = self.end_one(on, a).await?;
        self.active.remove(index);
        Ok(ended)
    }

    /// Ends every fault still in effect, newest first, going on past failures so one stuck
    /// node does not leave the others broken; returns the first failure. Faults whose end
    /// failed stay in effect, so calling it again retries them; with none left it does nothing.
    pub async fn heal_all<C: Faultable>(&mut self, on: &C) -> Result<(), FaultError> {
        let mut first = None;
        // Newest first; each fault leaves the list only once undone (cancel-safe).
        for i in (0..self.active.len()).rev() {
            if let Err(e) = self.end_at(on, i).await {
                first.get_or_insert(e);
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// True when no fault is in effect.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    /// The faults in effect, oldest first.
    pub fn active(&self) -> impl Iterator<Item = &Fault> {
        self.active.iter().map(|a| &a.fault)
    }

    /// What the fast clocks did after their first jumps, over every clock fault so far.
    pub fn fast_clock_totals(&self) -> TickerTotals {
        self.ticks.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// True while a fast clock is still ticking.
    pub fn clock_ticking(&self) -> bool {
        self.active
            .iter()
            .any(|a| a.ticker.as_ref().is_some_and(clock::Ticker::is_running))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    use rand::SeedableRng;

    use super::*;

    /// Records what faults did, refuses to pause `stuck` and to resume `frozen`.
    #[derive(Default)]
    struct Recording {
        log: Mutex<Vec<String>>,
        down: Mutex<BTreeSet<String>>,
        stuck: Option<String>,
        frozen: Mutex<Option<String>>,
    }

    impl Recording {
        fn note(&self, s: String) {
            self.log.lock().unwrap().push(s);
        }
    }

    impl Faultable for Recording {
        fn servers(&self) -> Vec<String> {
            vec!["a".into(), "b".into(), "c".into()]
        }
        async fn leader(&self) -> Result<Option<String>, ClusterError> {
            Ok(Some("b".into()))
        }
        async fn kill(&self, node: &str) -> Result<(), ClusterError> {
            self.down.lock().unwrap().insert(node.into());
            self.note(format!("kill {node}"));
            Ok(())
        }
        async fn restart(&self, node: &str, _: DataOnRestart) -> Result<(), ClusterError> {
            self.down.lock().unwrap().remove(node);
            self.note(format!("restart {node}"));
            Ok(())
        }
        async fn pause(&self, node: &str) -> Result<(), ClusterError> {
            if self.stuck.as_deref() == Some(node) {
                return Err(ClusterError::BadPartition(format!("{node} is stuck")));
            }
            self.down.lock().unwrap().insert(node.into());
            self.note(format!("pause {node}"));
            Ok(())
        }
        async fn resume(&self, node: &str) -> Result<(), ClusterError> {
            if self.frozen.lock().unwrap().as_deref() == Some(node) {
                return Err(ClusterError::BadPartition(format!("{node} is frozen")));
            }
            self.down.lock().unwrap().remove(node);
            self.note(format!("resume {node}"));
            Ok(())
        }
        async fn partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
            self.note(format!("partition {:?}", grudge.nodes()));
            Ok(())
        }
        async fn heal(&self) -> Result<(), ClusterError> {
            self.note("heal".into());
            Ok(())
        }
        async fn heal_partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
            self.note(format!("heal {:?}", grudge.nodes()));
            Ok(())
        }
        fn clock(&self, node: &str) -> Result<ClockAccess, ClusterError> {
            self.note(format!("clock {node}"));
            Ok(ClockAccess::Monotonic)
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn every_started_fault_is_undone_newest_first() {
        let c = Recording::default();
        let mut f = Faults::default();
        let data = DataOnRestart::Keep;
        f.start(
            &c,
            Fault::Kill {
                nodes: vec!["b".into()],
                data,
            },
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::Partition {
                grudge: Grudge::from_groups(
                    &[names(&["a"]), names(&["c"])],
                    &names(&["a", "b", "c"]).into_iter().collect(),
                )
                .unwrap(),
            },
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::Pause {
                nodes: vec!["a".into(), "c".into()],
            },
        )
        .await
        .unwrap();
        assert_eq!(c.down.lock().unwrap().len(), 3);
        f.heal_all(&c).await.unwrap();
        assert!(f.is_empty());
        assert!(c.down.lock().unwrap().is_empty(), "every node is back");
        let log = c.log.lock().unwrap().clone();
        // A partition's end removes its own cuts (heal_partition), not every partition.
        assert_eq!(
            &log[log.len() - 4..],
            ["resume a", "resume c", "heal [\"a\", \"c\"]", "restart b"]
        );
    }

    /// Serves its cluster again only when `rejoins` says so.
    struct Rejoining {
        inner: Recording,
        rejoins: bool,
    }

    impl Faultable for Rejoining {
        fn servers(&self) -> Vec<String> {
            self.inner.servers()
        }
        async fn leader(&self) -> Result<Option<String>, ClusterError> {
            self.inner.leader().await
        }
        async fn kill(&self, node: &str) -> Result<(), ClusterError> {
            self.inner.kill(node).await
        }
        async fn restart(&self, node: &str, data: DataOnRestart) -> Result<(), ClusterError> {
            self.inner.restart(node, data).await
        }
        async fn pause(&self, node: &str) -> Result<(), ClusterError> {
            self.inner.pause(node).await
        }
        async fn resume(&self, node: &str) -> Result<(), ClusterError> {
            self.inner.resume(node).await
        }
        async fn partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
            self.inner.partition(grudge).await
        }
        async fn heal(&self) -> Result<(), ClusterError> {
            self.inner.heal().await
        }
        fn clock(&self, node: &str) -> Result<ClockAccess, ClusterError> {
            self.inner.clock(node)
        }
        async fn serving(&self, node: &str) -> Result<(), String> {
            if self.rejoins {
                Ok(())
            } else {
                Err(format!("{node} sees no leader"))
            }
        }
    }

    #[tokio::test]
    async fn a_kill_ends_once_its_node_serves_again_and_says_when_it_does_not() {
        let kill = || Fault::Kill {
            nodes: names(&["b"]),
            data: DataOnRestart::Wipe,
        };
        let ok = Rejoining {
            inner: Recording::default(),
            rejoins: true,
        };
        let mut f = Faults::default().rejoin_within(Duration::from_millis(300));
        f.start(&ok, kill()).await.unwrap();
        let ended = f.end_last(&ok).await.unwrap();
        assert_eq!(ended.rejoined.len(), 1);
        assert_eq!(ended.rejoined[0].0, "b");
        assert!(ended.not_rejoined.is_empty());

        let stuck = Rejoining {
            inner: Recording::default(),
            rejoins: false,
        };
        f.start(&stuck, kill()).await.unwrap();
        let ended = f.end_last(&stuck).await.unwrap();
        assert!(f.is_empty(), "restarted: not retried by a heal");
        assert!(
            stuck.inner.down.lock().unwrap().is_empty(),
            "b was restarted"
        );
        assert_eq!(
            ended.not_rejoined,
            ["b did not serve its cluster within 0.3 s of its restart: b sees no leader"]
        );
    }

    #[tokio::test]
    async fn a_fault_that_failed_half_way_is_still_undone() {
        let c = Recording {
            stuck: Some("c".into()),
            ..Recording::default()
        };
        let mut f = Faults::default();
        let started = f
            .start(
                &c,
                Fault::Pause {
                    nodes: vec!["a".into(), "c".into()],
                },
            )
            .await;
        assert!(started.is_err());
        assert_eq!(*c.down.lock().unwrap(), BTreeSet::from(["a".to_string()]));
        f.heal_all(&c).await.unwrap();
        assert!(
            c.down.lock().unwrap().is_empty(),
            "a was resumed although c failed"
        );
    }

    #[tokio::test]
    async fn targets_resolve_against_the_faultable() {
        let c = Recording::default();
        let leader = c.leader().await.unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let nodes = resolve(Target::Leader, &c.servers(), leader.as_deref(), &mut rng).unwrap();
        assert_eq!(nodes, ["b"]);
    }

    #[tokio::test]
    async fn heal_all_retries_what_failed_and_then_does_nothing() {
        let c = Recording::default();
        *c.frozen.lock().unwrap() = Some("a".into());
        let mut f = Faults::default();
        f.start(
            &c,
            Fault::Pause {
                nodes: names(&["a"]),
            },
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::Pause {
                nodes: names(&["c"]),
            },
        )
        .await
        .unwrap();
        assert!(f.heal_all(&c).await.is_err(), "a cannot be resumed yet");
        assert_eq!(f.active().count(), 1, "the failed undo is kept");
        assert_eq!(*c.down.lock().unwrap(), BTreeSet::from(["a".to_string()]));
        *c.frozen.lock().unwrap() = None;
        f.heal_all(&c).await.unwrap();
        assert!(f.is_empty() && c.down.lock().unwrap().is_empty());
        let before = c.log.lock().unwrap().len();
        f.heal_all(&c).await.unwrap();
        f.end_last(&c).await.unwrap();
        assert_eq!(c.log.lock().unwrap().len(), before, "nothing left to undo");
    }

    #[tokio::test]
    async fn a_clock_fault_on_monotonic_leases_is_reported_not_refused() {
        let c = Recording::default();
        let mut f = Faults::default();
        let clock = |realism, prefix: &str| Fault::Clock {
            nodes: names(&["a", "b"]),
            skew: ClockSkew::Jump(std::time::Duration::from_secs(8)),
            prefix: prefix.into(),
            realism,
        };
        let started = f
            .start(&c, clock(Realism::Modelled, "lb/c1"))
            .await
            .unwrap();
        assert_eq!(
            started.clock,
            [
                ("a".to_string(), ClockEffect::Monotonic),
                ("b".to_string(), ClockEffect::Monotonic)
            ]
        );
        assert_eq!(clock(Realism::Modelled, "x").realism().name(), "modelled");
        assert_eq!(clock(Realism::Modelled, "x").kind(), "clock");
        assert!(matches!(
            f.start(&c, clock(Realism::Real, "lb/c1")).await,
            Err(FaultError::RealClock)
        ));
        assert!(matches!(
            f.start(&c, clock(Realism::Modelled, "")).await,
            Err(FaultError::Clock(ClockError::NoPrefix))
        ));
        assert!(!f.clock_ticking());
        f.heal_all(&c).await.unwrap();
        assert!(f.is_empty());
        assert_eq!(
            clock_access(System::Etcd, "e".into()),
            ClockAccess::Monotonic
        );
        assert_eq!(
            clock_access(System::Redlock, "e".into()),
            ClockAccess::Redis {
                endpoint: "e".into()
            }
        );
    }

    /// The state letter of `/proc/<pid>/stat` (`T` when stopped).
    fn proc_state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.chars().next().unwrap()
    }

    async fn wait_state(pid: u32, stopped: bool) -> char {
        for _ in 0..100 {
            let s = proc_state(pid);
            if (s == 'T') == stopped {
                return s;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        proc_state(pid)
    }

    #[tokio::test]
    async fn paused_clients_are_resumed_by_heal_all() {
        let mut kids: Vec<std::process::Child> = (0..2)
            .map(|_| {
                std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .unwrap()
            })
            .collect();
        let pids: Vec<u32> = kids.iter().map(|k| k.id()).collect();
        let control = WorkerControl::from_pids(vec![(pids[0], vec![0, 1]), (pids[1], vec![2, 3])]);
        let c = Recording::default();
        let mut f = Faults::with_workers(control.clone());
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let w = pick_worker(ClientTarget::Holder, &[3], &control, &mut rng).unwrap();
        assert_eq!(w, 1);
        f.start(&c, Fault::PauseClients { workers: vec![w] })
            .await
            .unwrap();
        assert_eq!(wait_state(pids[1], true).await, 'T', "worker 1 stopped");
        assert_ne!(proc_state(pids[0]), 'T', "worker 0 untouched");
        f.heal_all(&c).await.unwrap();
        assert_ne!(wait_state(pids[1], false).await, 'T', "worker 1 resumed");
        f.heal_all(&c).await.unwrap();
        // Without workers the pause is refused, and healing it is harmless.
        let mut bare = Faults::default();
        assert!(matches!(
            bare.start(&c, Fault::PauseClients { workers: vec![0] })
                .await,
            Err(FaultError::NoWorkers)
        ));
        bare.heal_all(&c).await.unwrap();
        for k in &mut kids {
            k.kill().unwrap();
            k.wait().unwrap();
        }
    }
}
