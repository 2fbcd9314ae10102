//! The books that always heal: every fault started through [`Faults`] is undone by
//! [`Faults::heal_all`] at the end of a cell, newest first; a fault whose undoing failed stays
//! listed, so calling it again retries, and a heal with nothing left to undo does nothing. Should
//! a run end early, dropping the cluster removes its containers (and with them every partition
//! rule and paused process), dropping [`Faults`] stops every fast clock, and dropping the
//! workers kills them. The books name no fault kind: each [`Fault`] starts and undoes itself.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;

use crate::fault::{
    ClientLinks, Ctx, Ended, Fault, FaultError, Faultable, REJOIN_TIMEOUT, Started, Ticker,
    TickerTotals, WorkerProcesses,
};
use crate::history::{Clock, Event, EventKind, HistoryHandle};

/// One fault window in effect.
#[derive(Debug)]
struct Window {
    id: u64,
    kind: &'static str,
    targets: Vec<String>,
    /// Why the start failed: the window is closed with `info`.
    start_error: Option<String>,
    /// Why an undo failed (it is retried by the heal).
    end_error: Option<String>,
    /// Its outcome was recorded already (a final heal failed and said so).
    closed: bool,
    /// When its start had taken effect (the start returned), µs on the cell clock.
    effect_us: Option<u64>,
    /// When its undo was first invoked, µs on the cell clock.
    undo_us: Option<u64>,
    /// What its start did, in words ([`Started::describe`]).
    effect: Option<String>,
}

/// The faults in effect and their windows, kept in step (the i-th window is the i-th fault).
#[derive(Debug, Default)]
pub(super) struct Ledger {
    pub(super) faults: Faults,
    windows: Vec<Window>,
    next_id: u64,
}

/// The faults one cluster's nemesis has in effect, shared between the nemesis and the runner so
/// the runner can heal them when the nemesis' future was dropped. Cloning shares the books.
#[derive(Debug, Clone, Default)]
pub struct Books(pub(super) Arc<AsyncMutex<Ledger>>);

/// Records a fault event if there is a history to record it in (a heal after the recorder
/// finished has none: it is reported through the heal's result instead).
pub(super) fn note(history: Option<&HistoryHandle>, event: Event) {
    if let Some(h) = history {
        // A closed recorder means the cell is over; the heal still goes on.
        let _ = h.record(event);
    }
}

fn outcome(t_us: u64, kind: EventKind, w: &Window, error: Option<String>) -> Event {
    Event {
        error,
        effect_us: w.effect_us,
        undo_us: w.undo_us,
        effect: w.effect.clone(),
        ..Event::fault(t_us, kind, w.kind, w.targets.clone())
    }
}

impl Books {
    /// How many fault windows are in effect (started and not yet undone).
    pub async fn in_effect(&self) -> usize {
        self.0.lock().await.windows.len()
    }

    /// Heals every fault still in effect, newest first, going on past failures; records each
    /// window's outcome in `history` when given (`ok`, or `info` with the error). Returns the
    /// first failure; what failed stays in effect, so calling it again retries, and with
    /// nothing in effect it does nothing.
    pub async fn heal<C: Faultable>(
        &self,
        on: &C,
        clock: Clock,
        history: Option<&HistoryHandle>,
    ) -> Result<(), FaultError> {
        let mut ledger = self.0.lock().await;
        let mut first = None;
        for i in (0..ledger.windows.len()).rev() {
            if let Err(e) = ledger.end(on, i, clock, history, true).await {
                first.get_or_insert(e);
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Ledger {
    /// Starts `fault` as a new window, returning its id and when it took effect (µs on the
    /// cell clock); on failure the window is undone at once.
    pub(super) async fn start<C: Faultable>(
        &mut self,
        on: &C,
        fault: Fault,
        targets: Vec<String>,
        clock: Clock,
        history: Option<&HistoryHandle>,
    ) -> Option<(u64, u64)> {
        let id = self.next_id;
        self.next_id += 1;
        let kind = fault.kind();
        note(
            history,
            Event::fault(clock.now_us(), EventKind::Invoke, kind, targets.clone()),
        );
        // Listed before it starts (Faults::start lists it before its first await too), so a
        // cancelled start is still healed.
        self.windows.push(Window {
            id,
            kind,
            targets,
            start_error: None,
            end_error: None,
            closed: false,
            effect_us: None,
            undo_us: None,
            effect: None,
        });
        let i = self.windows.len() - 1;
        let started = match self.faults.start(on, fault).await {
            Ok(s) => s,
            Err(e) => {
                self.windows[i].start_error = Some(format!("start: {e}"));
                // Half-started: undo what did happen now rather than after the duration.
                let _ = self.end(on, i, clock, history, false).await;
                return None;
            }
        };
        let effect = clock.now_us();
        self.windows[i].effect_us = Some(effect);
        self.windows[i].effect = started.describe();
        Some((id, effect))
    }

    /// Undoes window `i`; records its outcome when it is undone, or when `last` (the final
    /// heal) and the undo failed.
    pub(super) async fn end<C: Faultable>(
        &mut self,
        on: &C,
        i: usize,
        clock: Clock,
        history: Option<&HistoryHandle>,
        last: bool,
    ) -> Result<(), FaultError> {
        if let Some(w) = self.windows.get_mut(i) {
            w.undo_us.get_or_insert_with(|| clock.now_us());
        }
        match self.faults.end_at(on, i).await {
            Ok(ended) => {
                let w = self.windows.remove(i);
                if !w.closed {
                    let rejoin = (!ended.not_rejoined.is_empty())
                        .then(|| format!("{REJOIN_FAILED} {}", ended.not_rejoined.join("; ")));
                    let (kind, error) = match (&w.start_error, &w.end_error, rejoin) {
                        (Some(s), _, _) => (EventKind::Info, Some(s.clone())),
                        // Undone, but a node does not serve its cluster: not a clean end.
                        (None, _, Some(r)) => (EventKind::Info, Some(r)),
                        (None, Some(e), None) => {
                            (EventKind::Ok, Some(format!("undone on retry; {e}")))
                        }
                        (None, None, None) => (EventKind::Ok, None),
                    };
                    note(history, outcome(clock.now_us(), kind, &w, error));
                }
                Ok(())
            }
            Err(e) => {
                let w = &mut self.windows[i];
                w.end_error = Some(format!("end: {e}"));
                if last && !w.closed {
                    let mut text = format!("heal: {e}");
                    if let Some(s) = &w.start_error {
                        text = format!("{s}; {text}");
                    }
                    note(
                        history,
                        outcome(clock.now_us(), EventKind::Info, w, Some(text)),
                    );
                    w.closed = history.is_some();
                }
                Err(e)
            }
        }
    }

    /// Marks window `i`, a `holder` client pause, as one that missed the hold (its client had
    /// written its work back or begun its release before the stop took effect): its end is
    /// recorded as `info` with [`MISSED_THE_HOLD`].
    pub(super) fn missed_the_hold(&mut self, i: usize) {
        if let Some(w) = self.windows.get_mut(i) {
            w.start_error = Some(MISSED_THE_HOLD.to_string());
        }
    }

    pub(super) fn position(&self, id: u64) -> Option<usize> {
        self.windows.iter().position(|w| w.id == id)
    }
}

/// The error text of a `holder` client pause that stopped its worker just after the client
/// wrote its work back or began its release (see `held_at_the_stop` in the nemesis): thawed at
/// once, and tried again.
pub const MISSED_THE_HOLD: &str = "start: the chosen worker's client had written its work back or begun its release before the stop took effect (its events arrived after the check); thawed at once, the pause is tried again";

/// The error text of a fault end whose undo ran but whose restarted node did not serve its
/// cluster in time (the end is `info`).
pub const REJOIN_FAILED: &str = "rejoin:";

/// A fault in effect, with the fast clock that runs until it ends.
#[derive(Debug)]
struct Active {
    fault: Fault,
    ticker: Option<Ticker>,
}

/// The faults in effect on one cluster (and its cell's workers), so every one of them is undone.
#[derive(Debug, Default)]
pub struct Faults {
    active: Vec<Active>,
    workers: Option<Arc<dyn WorkerProcesses>>,
    links: Option<Arc<dyn ClientLinks>>,
    ticks: Arc<Mutex<TickerTotals>>,
    /// How long a restarted node may take to serve again; `None` for [`REJOIN_TIMEOUT`].
    rejoin_timeout: Option<Duration>,
}

impl Faults {
    /// Bookkeeping that can also pause the cell's worker processes.
    pub fn with_workers(workers: Arc<dyn WorkerProcesses>) -> Faults {
        Faults {
            workers: Some(workers),
            ..Faults::default()
        }
    }

    /// The same bookkeeping, able to slow the cell's client links too.
    pub fn with_links(self, links: Option<Arc<dyn ClientLinks>>) -> Faults {
        Faults { links, ..self }
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
        // Boxed, here and in the undo: a fault's own future nests deep (a kill's undo polls the
        // cluster until the node rejoins), and the cell's future holds the nemesis' inline; a
        // box keeps that nesting out of the cell future's layout (rustc's query depth limit).
        let (r, ticker) = Box::pin(fault.start(on, &self.ctx())).await;
        if let Some(a) = self.active.last_mut() {
            a.ticker = ticker;
        }
        r
    }

    /// What a fault's start and undo may use besides the cluster.
    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            workers: self.workers.as_deref(),
            links: self.links.as_deref(),
            ticks: &self.ticks,
            rejoin_timeout: self.rejoin_timeout.unwrap_or(REJOIN_TIMEOUT),
        }
    }

    async fn end_one<C: Faultable>(&self, on: &C, a: &Active) -> Result<Ended, FaultError> {
        if let Some(t) = &a.ticker {
            t.stop().await;
        }
        Box::pin(a.fault.undo(on, &self.ctx())).await
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
            .any(|a| a.ticker.as_ref().is_some_and(Ticker::is_running))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    use rand::SeedableRng;

    use super::*;
    use crate::cluster::{ClusterError, DataOnRestart};
    use crate::fault::clock::clock_access;
    use crate::fault::{
        ClockAccess, ClockEffect, ClockError, Grudge, Killed, Partitioned, PausedNodes, Realism,
        Skew, Skewed, Target, resolve,
    };
    use crate::system::System;

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
            Fault::Kill(Killed {
                nodes: vec!["b".into()],
                data,
            }),
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::Partition(Partitioned {
                grudge: Grudge::from_groups(
                    &[names(&["a"]), names(&["c"])],
                    &names(&["a", "b", "c"]).into_iter().collect(),
                )
                .unwrap(),
            }),
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::PauseNode(PausedNodes {
                nodes: vec!["a".into(), "c".into()],
            }),
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
        /// The servers a partition in effect cuts every node off from.
        cut: Vec<String>,
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
        fn cut_from(&self, _: &str) -> Vec<String> {
            self.cut.clone()
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
        let kill = || {
            Fault::Kill(Killed {
                nodes: names(&["b"]),
                data: DataOnRestart::Wipe,
            })
        };
        let ok = Rejoining {
            inner: Recording::default(),
            rejoins: true,
            cut: Vec::new(),
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
            cut: Vec::new(),
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
    async fn a_node_restarted_inside_a_partition_is_not_waited_for() {
        // It would not serve until the heal: waiting the whole rejoin timeout would hold the
        // nemesis, and so that partition's own heal, for as long.
        let cut_off = Rejoining {
            inner: Recording::default(),
            rejoins: false,
            cut: names(&["d", "e"]),
        };
        let mut f = Faults::default().rejoin_within(Duration::from_secs(30));
        f.start(
            &cut_off,
            Fault::Kill(Killed {
                nodes: names(&["b"]),
                data: DataOnRestart::Keep,
            }),
        )
        .await
        .unwrap();
        let asked = std::time::Instant::now();
        let ended = f.end_last(&cut_off).await.unwrap();
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "the end waited {:?} for a node a partition cuts off",
            asked.elapsed()
        );
        assert!(
            cut_off.inner.down.lock().unwrap().is_empty(),
            "b was restarted"
        );
        assert!(ended.rejoined.is_empty());
        assert_eq!(
            ended.not_rejoined,
            [
                "b was restarted inside a partition that cuts it off from d, e: whether it serves \
              its cluster was not waited for (it may not until the heal)"
            ]
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
                Fault::PauseNode(PausedNodes {
                    nodes: vec!["a".into(), "c".into()],
                }),
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
            Fault::PauseNode(PausedNodes {
                nodes: names(&["a"]),
            }),
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::PauseNode(PausedNodes {
                nodes: names(&["c"]),
            }),
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
        let clock = |realism, prefix: &str| {
            Fault::Clock(Skewed {
                nodes: names(&["a", "b"]),
                skew: Skew::Jump(std::time::Duration::from_secs(8)),
                prefix: prefix.into(),
                realism,
            })
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
}
