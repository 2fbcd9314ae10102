//! The nemesis: plays one cell's fault timeline ([`Schedule::timeline`]) against a
//! [`Faultable`] cluster (and the cell's worker processes) while the clients run, and heals
//! everything at the end.
//!
//! Each planned fault becomes a *window*: at its time on the cell clock its targets are resolved
//! from its `pick_seed` (so a seed picks the same nodes, halves and workers again), it starts
//! through [`Faults`] and a `fault` `invoke` event names its kind and targets; after its duration
//! (a kill's `restart_after`) it is undone and an `ok` event closes the window. A window whose
//! start failed (or half-happened) is undone at once and closed with `info` carrying the error;
//! an undo that fails is retried by the final heal, and closed with `info` only if that fails
//! too. So every window is one `invoke` and one outcome, which is how the checkers pair them.
//!
//! Healing happens on every exit path. When the clients stop (normally or with an error) the
//! runner tells the nemesis, which heals what is still in effect and records it. The windows in
//! effect live in [`Books`], shared with the runner: if the nemesis' future is dropped (a
//! deadline, Ctrl-C) the runner heals through its clone of the books in its cleanup path,
//! since `Drop` cannot await. Faults are listed before they start and leave the list only once
//! undone, so a start or undo cancelled half-way is still healed.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use tokio::sync::{Mutex, broadcast};

use super::{ClockSkew, Fault, FaultError, Faultable, Faults, Realism, pick_worker, resolve};
use crate::history::{Clock, Event, EventKind, HistoryHandle, Op};
use crate::runner::{Running, WorkerControl};
use crate::spec::chaos::{ClientTarget, ClockSkew as SpecSkew, FaultKind, PlannedFault, Schedule};

/// How long a `holder` client pause waits past its time for some client to hold a lock
/// (between holds nobody does), checking every [`HOLDER_RECHECK`].
pub const HOLDER_WAIT: Duration = Duration::from_secs(2);
/// See [`HOLDER_WAIT`].
const HOLDER_RECHECK: Duration = Duration::from_millis(10);

/// How often a fast clock jumps: its rate `r` becomes a jump of `(r - 1) × FAST_TICK` every
/// `FAST_TICK`.
pub const FAST_TICK: Duration = Duration::from_millis(250);

/// The timeline bound of a cell that stops after a number of acquisitions, not a duration:
/// faults planned past the cell's real end never start, because the nemesis stops with the
/// clients.
pub const OPEN_CELL_BOUND: Duration = Duration::from_secs(3600);

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
    /// What its start did, in words ([`super::Started::describe`]).
    effect: Option<String>,
}

/// The faults in effect and their windows, kept in step (the i-th window is the i-th fault).
#[derive(Debug, Default)]
struct Ledger {
    faults: Faults,
    windows: Vec<Window>,
    next_id: u64,
}

/// The faults one cluster's nemesis has in effect, shared between the nemesis and the runner so
/// the runner can heal them when the nemesis' future was dropped. Cloning shares the books.
#[derive(Debug, Clone, Default)]
pub struct Books(Arc<Mutex<Ledger>>);

/// Records a fault event if there is a history to record it in (a heal after the recorder
/// finished has none: it is reported through the heal's result instead).
fn note(history: Option<&HistoryHandle>, event: Event) {
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
    async fn start<C: Faultable>(
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
    async fn end<C: Faultable>(
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

    fn position(&self, id: u64) -> Option<usize> {
        self.windows.iter().position(|w| w.id == id)
    }
}

/// The error text of a fault end whose undo ran but whose restarted node did not serve its
/// cluster in time (the end is `info`).
pub const REJOIN_FAILED: &str = "rejoin:";

/// The clients holding a lock now, followed from the live event stream (for `holder` pauses).
#[derive(Debug, Default)]
struct Holders(BTreeSet<u32>);

impl Holders {
    fn see(&mut self, e: &Event) {
        let Some(c) = e.client() else { return };
        match (e.op, e.kind) {
            (Op::Acquire, EventKind::Ok) => {
                self.0.insert(c);
            }
            // From the release's invoke on, the client no longer counts on the lock.
            (Op::Release | Op::LeaseLost, _) => {
                self.0.remove(&c);
            }
            _ => {}
        }
    }

    fn list(&self) -> Vec<u32> {
        self.0.iter().copied().collect()
    }

    fn any_of(&self, clients: &[u32]) -> bool {
        clients.iter().any(|c| self.0.contains(c))
    }

    /// Sees every event recorded so far that the nemesis has not read yet.
    fn catch_up(&mut self, events: &mut broadcast::Receiver<Event>) {
        loop {
            match events.try_recv() {
                Ok(e) => self.see(&e),
                Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(_) => break,
            }
        }
    }
}

/// One cell's nemesis: its timeline, and the books it keeps the faults in.
#[derive(Debug, Clone)]
pub struct Nemesis {
    timeline: Vec<PlannedFault>,
    prefix: String,
    books: Books,
}

/// A planned fault made concrete: the fault to start and the targets its events name.
type Resolved = (Fault, Vec<String>);

impl Nemesis {
    /// The nemesis of a cell lasting `cell` (see [`OPEN_CELL_BOUND`] for cells without a
    /// duration) under `schedule`, whose keys live under `prefix` (clock faults cut only
    /// those), keeping its faults in `books`.
    pub fn new(schedule: &Schedule, cell: Duration, prefix: &str, books: Books) -> Nemesis {
        Nemesis {
            timeline: schedule.timeline(cell),
            prefix: prefix.to_string(),
            books,
        }
    }

    /// The fault occurrences it will play, in order.
    pub fn timeline(&self) -> &[PlannedFault] {
        &self.timeline
    }

    /// Plays the timeline on `on` until the clients stop, then heals everything still in
    /// effect, recording every start and end in the history.
    pub async fn play<C: Faultable>(self, on: &C, mut stage: Running) {
        let clock = stage.clock;
        let history = stage.history.clone();
        {
            let mut ledger = self.books.0.lock().await;
            if ledger.faults.is_empty() {
                ledger.faults = match &stage.workers {
                    Some(w) => Faults::with_workers(w.clone()),
                    None => Faults::default(),
                };
            }
        }
        let mut holders = Holders::default();
        let mut ends: Vec<(Duration, u64)> = Vec::new();
        let mut next = 0;
        // A `holder` pause due while nobody held a lock starts at the first recheck that finds
        // a holder, within HOLDER_WAIT of its time.
        let mut recheck: Option<Duration> = None;
        let mut listening = true;
        loop {
            let now = Duration::from_micros(clock.now_us());
            let start_at = self
                .timeline
                .get(next)
                .map(|p| recheck.map_or(p.at, |r| r.max(p.at)));
            let end_at = ends.iter().map(|e| e.0).min();
            let due = start_at.into_iter().chain(end_at).min();
            let wait = due.map_or(Duration::ZERO, |d| d.saturating_sub(now));
            tokio::select! {
                biased;
                _ = stage.stopped.wait_for(|s| *s) => break,
                ev = stage.events.recv(), if listening => match ev {
                    Ok(e) => holders.see(&e),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => listening = false,
                },
                () = tokio::time::sleep(wait), if due.is_some() => {
                    // Ends before starts at the same instant, so windows of one entry do not
                    // overlap.
                    if end_at.is_some() && end_at <= start_at.or(end_at) {
                        let k = ends.iter().enumerate().min_by_key(|(_, e)| e.0).map(|(k, _)| k);
                        let Some(k) = k else { continue };
                        let (_, id) = ends.remove(k);
                        let mut ledger = self.books.0.lock().await;
                        if let Some(i) = ledger.position(id) {
                            let _ = ledger.end(on, i, clock, Some(&history), false).await;
                        }
                    } else {
                        let p = &self.timeline[next];
                        let waits_for_holder = matches!(
                            p.kind,
                            FaultKind::PauseClient { target: ClientTarget::Holder }
                        );
                        if waits_for_holder {
                            holders.catch_up(&mut stage.events);
                        }
                        let now = Duration::from_micros(clock.now_us());
                        if waits_for_holder && holders.list().is_empty() && now < p.at + HOLDER_WAIT {
                            recheck = Some(now + HOLDER_RECHECK);
                            continue;
                        }
                        let mut resolved =
                            self.resolve(on, p, &holders.list(), stage.workers.as_ref()).await;
                        if waits_for_holder && let Ok((fault, _)) = &resolved {
                            // The pick may be stale by now (a release since): right before the
                            // SIGSTOP, the chosen worker must still run a holder, else pick again
                            // within the wait, and past it the pause does not start.
                            holders.catch_up(&mut stage.events);
                            let still = stage.workers.as_ref().is_some_and(|w| {
                                fault.workers().iter().any(|&i| holders.any_of(w.clients(i)))
                            });
                            if !still {
                                let now = Duration::from_micros(clock.now_us());
                                if now < p.at + HOLDER_WAIT {
                                    recheck = Some(now + HOLDER_RECHECK);
                                    continue;
                                }
                                resolved = Err(format!(
                                    "no worker still held a lock when it was to be stopped, within {} s of the pause's time",
                                    HOLDER_WAIT.as_secs()
                                ));
                            }
                        }
                        recheck = None;
                        next += 1;
                        match resolved {
                            Ok((fault, targets)) => {
                                let mut ledger = self.books.0.lock().await;
                                if let Some((id, effect_us)) =
                                    ledger.start(on, fault, targets, clock, Some(&history)).await
                                {
                                    // A late start keeps its full duration: the end is due
                                    // from when the fault took effect, not from the plan.
                                    let effect = Duration::from_micros(effect_us);
                                    ends.push((effect + p.end().saturating_sub(p.at), id));
                                }
                            }
                            Err(e) => {
                                // Nothing was touched: a window of no targets, closed as unknown
                                // so the report shows the fault was due and did not happen.
                                let t = clock.now_us();
                                let kind = planned_kind(&p.kind);
                                note(Some(&history), Event::fault(t, EventKind::Invoke, kind, vec![]));
                                let ev = Event { error: Some(format!("start: {e}")), ..Event::fault(t, EventKind::Info, kind, vec![]) };
                                note(Some(&history), ev);
                            }
                        }
                    }
                }
            }
        }
        // The clients stopped: whatever is still in effect is healed and recorded now.
        let _ = self.books.heal(on, clock, Some(&history)).await;
    }

    /// Resolves `p`'s targets from its `pick_seed` into a fault to start.
    async fn resolve<C: Faultable>(
        &self,
        on: &C,
        p: &PlannedFault,
        holders: &[u32],
        workers: Option<&WorkerControl>,
    ) -> Result<Resolved, String> {
        let mut rng = StdRng::seed_from_u64(p.pick_seed);
        let servers = on.servers();
        let leader = async {
            on.leader()
                .await
                .map_err(|e| format!("finding the leader: {e}"))
        };
        let nodes = |target, leader: Option<String>, rng: &mut StdRng| {
            resolve(target, &servers, leader.as_deref(), rng).map_err(|e| e.to_string())
        };
        let needs_leader = |t| t == super::Target::Leader;
        let fault = match &p.kind {
            FaultKind::Kill { target, data } => {
                let l = if needs_leader(*target) {
                    leader.await?
                } else {
                    None
                };
                Fault::Kill {
                    nodes: nodes(*target, l, &mut rng)?,
                    data: *data,
                }
            }
            FaultKind::PauseNode { target } => {
                let l = if needs_leader(*target) {
                    leader.await?
                } else {
                    None
                };
                Fault::Pause {
                    nodes: nodes(*target, l, &mut rng)?,
                }
            }
            FaultKind::Clock { target, skew } => {
                let l = if needs_leader(*target) {
                    leader.await?
                } else {
                    None
                };
                Fault::Clock {
                    nodes: nodes(*target, l, &mut rng)?,
                    skew: clock_skew(*skew),
                    prefix: self.prefix.clone(),
                    realism: Realism::Modelled,
                }
            }
            FaultKind::Partition { shape, clients } => {
                let l = if *shape == super::Shape::IsolateLeader {
                    leader.await?
                } else {
                    None
                };
                let mut grudge = shape
                    .grudge(&servers, l.as_deref(), &mut rng)
                    .map_err(|e| e.to_string())?;
                if *clients {
                    // The clients go with a server drawn from the seed: they reach what it
                    // reaches (the isolated leader, a half, one side of a bridge).
                    let home = servers
                        .choose(&mut rng)
                        .ok_or("the cluster has no servers")?;
                    grudge = grudge.with_clients_beside(home);
                }
                grudge = grudge.with_companions(&on.companions());
                let targets = grudge
                    .blocked()
                    .iter()
                    .map(|(n, cut)| {
                        let cut: Vec<&str> = cut.iter().map(String::as_str).collect();
                        format!("{n} cut from {}", cut.join(","))
                    })
                    .collect();
                return Ok((Fault::Partition { grudge }, targets));
            }
            FaultKind::PauseClient { target } => {
                let w = workers.ok_or_else(|| super::PickError::NoWorkers.to_string())?;
                let i = pick_worker(*target, holders, w, &mut rng).map_err(|e| e.to_string())?;
                let mut targets = vec![format!("worker{i}")];
                targets.extend(w.clients(i).iter().map(|c| format!("client{c}")));
                return Ok((Fault::PauseClients { workers: vec![i] }, targets));
            }
            FaultKind::Mixed { .. } => {
                return Err("a mixed fault reached the nemesis undrawn (a timeline bug)".into());
            }
        };
        let targets = fault.nodes();
        Ok((fault, targets))
    }
}

/// The kind a planned fault's events carry when it could not be resolved into a [`Fault`]:
/// its chaos-file name, which is also [`Fault::kind`]'s.
fn planned_kind(kind: &FaultKind) -> &'static str {
    kind.name()
}

/// A schedule's clock skew as the fault primitive runs it.
pub fn clock_skew(skew: SpecSkew) -> ClockSkew {
    match skew {
        SpecSkew::Jump { by } => ClockSkew::Jump(by),
        SpecSkew::Fast { rate } => ClockSkew::Fast {
            every: FAST_TICK,
            jump: FAST_TICK.mul_f64((rate - 1.0).max(0.0)),
        },
    }
}

#[cfg(test)]
mod tests;
