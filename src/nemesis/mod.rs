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

mod books;
pub mod schedule;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::{broadcast, watch};

pub use books::{Books, Faults, REJOIN_FAILED};

use crate::fault::{ClientLinks, Fault, Faultable, Scene, WorkerProcesses};
use crate::history::{Clock, Event, EventKind, HistoryHandle, Op};
use crate::nemesis::schedule::{PlannedFault, Schedule};

/// A cell's clients at work, as what runs beside them sees it (the nemesis, a test): the runner
/// makes it when the clients start.
pub struct Running {
    /// The cell's clock: t_us = 0 at the cell's start.
    pub clock: Clock,
    /// For recording what runs beside the clients (fault events).
    pub history: HistoryHandle,
    /// Every event as it is recorded, from the cell's start.
    pub events: broadcast::Receiver<Event>,
    /// The worker processes, when the cell's clients run as processes (the runner's worker
    /// control).
    pub workers: Option<Arc<dyn WorkerProcesses>>,
    /// The links between the clients and servers, when the cell's clients run behind
    /// lockbench's latency relays (what a `slow` fault slows).
    pub links: Option<Arc<dyn ClientLinks>>,
    /// Turns true once the clients have stopped (or failed): what runs beside them ends then
    /// (the nemesis heals). A dropped sender counts as stopped.
    pub stopped: watch::Receiver<bool>,
}

/// How long a `holder` client pause waits past its time for some client to hold a lock
/// (between holds nobody does), checking every `HOLDER_RECHECK`.
pub const HOLDER_WAIT: Duration = Duration::from_secs(2);
/// See [`HOLDER_WAIT`].
const HOLDER_RECHECK: Duration = Duration::from_millis(10);

/// Whether one of the `stopped` workers' clients held a lock when its SIGSTOP took effect.
/// The check before the stop reads the events recorded until then, and a release the
/// worker wrote just before the stop may still be in its pipe (a 0.6 ms race, seen in CI:
/// the pause then landed between the holder's release `invoke` and its outcome, and missed
/// the hold). A stopped worker writes nothing new, so once [`HOLDER_SETTLE`] has let the
/// events it wrote before the stop arrive, the view of its clients is their state at the
/// stop.
async fn held_at_the_stop(
    workers: &dyn WorkerProcesses,
    stopped: &[usize],
    holders: &mut Holders,
    events: &mut broadcast::Receiver<Event>,
) -> bool {
    tokio::time::sleep(HOLDER_SETTLE).await;
    holders.catch_up(events);
    runs_a_holder(workers, stopped, holders)
}

/// Whether one of `chosen`'s worker processes runs a client that holds a lock now (past its
/// write-back no longer counts, see [`Holders`]).
fn runs_a_holder(workers: &dyn WorkerProcesses, chosen: &[usize], holders: &Holders) -> bool {
    chosen.iter().any(|&i| holders.any_of(workers.clients(i)))
}

/// How long a `holder` pause, once in effect, lets the stopped worker's last events arrive
/// before it confirms that the worker's client still held a lock at the stop (a worker's
/// events reach the runner through a pipe, within a millisecond or two).
const HOLDER_SETTLE: Duration = Duration::from_millis(50);

/// The timeline bound of a cell that stops after a number of acquisitions, not a duration:
/// faults planned past the cell's real end never start, because the nemesis stops with the
/// clients.
pub const OPEN_CELL_BOUND: Duration = Duration::from_secs(3600);

/// The clients holding a lock now and not yet past their critical section's write-back,
/// followed from the live event stream (for `holder` pauses).
#[derive(Debug, Default)]
struct Holders(BTreeSet<u32>);

impl Holders {
    fn see(&mut self, e: &Event) {
        let Some(c) = e.client() else { return };
        match (e.op, e.kind) {
            (Op::Acquire, EventKind::Ok) => {
                self.0.insert(c);
            }
            // From the release's invoke on, the client no longer counts on the lock; from its
            // write-back on, its critical section's work is done: a pause then would overlap
            // the next holder but leave fencing nothing to refuse (CI saw that too).
            (Op::Release | Op::LeaseLost | Op::Write, _) => {
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

/// A window the nemesis started and has not yet closed.
struct Open {
    /// When its undo is due on the cell clock.
    end_due: Duration,
    /// Its id in the books.
    id: u64,
    /// The `[[faults]]` entry it comes from.
    entry: usize,
    /// Its kind's name and its targets, as its `invoke` event names them.
    kind: &'static str,
    targets: Vec<String>,
    /// When its start took effect, µs on the cell clock.
    effect_us: u64,
}

/// Why `p`, resolved, is not started when a window of the same kind and targets is still open:
/// the history pairs a fault's `invoke` with the next end of the same kind and targets, which
/// two such windows at once would make ambiguous, and the second would act on what the first
/// did (a kill of a node already down fails, and its undo restarts the node early).
fn already_in_effect(
    open: &[Open],
    p: &PlannedFault,
    resolved: &Result<Resolved, String>,
    clock: Clock,
) -> Option<String> {
    let targets = &resolved.as_ref().ok()?.1;
    let o = open
        .iter()
        .find(|o| o.kind == p.kind.name() && o.targets == *targets)?;
    Some(format!(
        "{} of {} is still in effect (a window that took effect at {:.3} s, {:.3} s ago): not \
         started twice",
        o.kind,
        o.targets.join(", "),
        o.effect_us as f64 / 1e6,
        clock.now_us().saturating_sub(o.effect_us) as f64 / 1e6
    ))
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
                }
                .with_links(stage.links.clone());
            }
        }
        let mut holders = Holders::default();
        let mut open: Vec<Open> = Vec::new();
        let mut next = 0;
        // A `holder` pause due while nobody held a lock starts at the first recheck that finds
        // a holder, within HOLDER_WAIT of its time.
        let mut recheck: Option<Duration> = None;
        let mut listening = true;
        loop {
            let now = Duration::from_micros(clock.now_us());
            let start_at = self.start_due(next, recheck, &open);
            let end_at = open.iter().map(|o| o.end_due).min();
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
                        self.end_first(on, &mut open, clock, &history).await;
                    } else {
                        let p = &self.timeline[next];
                        let waits_for_holder = p.kind.waits_for_holder();
                        if waits_for_holder {
                            holders.catch_up(&mut stage.events);
                        }
                        let now = Duration::from_micros(clock.now_us());
                        if waits_for_holder && holders.list().is_empty() && now < p.at + HOLDER_WAIT {
                            recheck = Some(now + HOLDER_RECHECK);
                            continue;
                        }
                        let mut resolved =
                            self.resolve(on, p, &holders.list(), stage.workers.as_deref()).await;
                        if waits_for_holder && let Ok((fault, _)) = &resolved {
                            // The pick may be stale by now (a release since): right before the
                            // SIGSTOP, the chosen worker must still run a holder, else pick again
                            // within the wait, and past it the pause does not start.
                            holders.catch_up(&mut stage.events);
                            let still = stage.workers.as_ref().is_some_and(|w| {
                                runs_a_holder(w.as_ref(), fault.workers(), &holders)
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
                        if let Some(why) = already_in_effect(&open, p, &resolved, clock) {
                            resolved = Err(why);
                        }
                        recheck = None;
                        next += 1;
                        match resolved {
                            Ok((fault, targets)) => {
                                let stopped = fault.workers().to_vec();
                                let mut ledger = self.books.0.lock().await;
                                if let Some((id, effect_us)) =
                                    ledger.start(on, fault, targets.clone(), clock, Some(&history)).await
                                {
                                    drop(ledger);
                                    if waits_for_holder
                                        && let Some(w) = &stage.workers
                                        && !held_at_the_stop(w.as_ref(), &stopped, &mut holders, &mut stage.events)
                                            .await
                                    {
                                        // The stopped worker's last events, written before the
                                        // SIGSTOP, say its client had already written its work
                                        // back or begun its release: the pause missed the hold.
                                        // Thawed now, the window closed as `info`, and the pause
                                        // tried again.
                                        let mut ledger = self.books.0.lock().await;
                                        if let Some(i) = ledger.position(id) {
                                            ledger.missed_the_hold(i);
                                            let _ = ledger.end(on, i, clock, Some(&history), false).await;
                                        }
                                        let now = Duration::from_micros(clock.now_us());
                                        if now < p.at + HOLDER_WAIT {
                                            next -= 1;
                                            recheck = Some(now + HOLDER_RECHECK);
                                        }
                                        continue;
                                    }
                                    // A late start keeps its full duration: the end is due
                                    // from when the fault took effect, not from the plan.
                                    let effect = Duration::from_micros(effect_us);
                                    open.push(Open {
                                        end_due: effect + p.end().saturating_sub(p.at),
                                        id,
                                        entry: p.fault,
                                        kind: p.kind.name(),
                                        targets,
                                        effect_us,
                                    });
                                }
                            }
                            Err(e) => {
                                // Nothing was touched: a window of no targets, closed as unknown
                                // so the report shows the fault was due and did not happen.
                                let t = clock.now_us();
                                let kind = p.kind.name();
                                books::note(Some(&history), Event::fault(t, EventKind::Invoke, kind, vec![]));
                                let ev = Event { error: Some(format!("start: {e}")), ..Event::fault(t, EventKind::Info, kind, vec![]) };
                                books::note(Some(&history), ev);
                            }
                        }
                    }
                }
            }
        }
        // The clients stopped: whatever is still in effect is healed and recorded now.
        let _ = self.books.heal(on, clock, Some(&history)).await;
    }

    /// When the timeline's occurrence `next` is due: its time (or the `recheck` of a `holder`
    /// pause), but one entry's windows never overlap, as the plan's occurrences do not: one due
    /// while its entry's previous window is still open (its undo ran long, e.g. a restarted
    /// node slow to serve its cluster) starts once that window has closed.
    fn start_due(&self, next: usize, recheck: Option<Duration>, open: &[Open]) -> Option<Duration> {
        let p = self.timeline.get(next)?;
        let at = recheck.map_or(p.at, |r| r.max(p.at));
        let busy = open
            .iter()
            .filter(|o| o.entry == p.fault)
            .map(|o| o.end_due)
            .max();
        Some(busy.map_or(at, |b| at.max(b)))
    }

    /// Undoes the open window due first and closes it in the history.
    async fn end_first<C: Faultable>(
        &self,
        on: &C,
        open: &mut Vec<Open>,
        clock: Clock,
        history: &HistoryHandle,
    ) {
        let first = open.iter().enumerate().min_by_key(|(_, o)| o.end_due);
        let Some(k) = first.map(|(k, _)| k) else {
            return;
        };
        let id = open.remove(k).id;
        let mut ledger = self.books.0.lock().await;
        if let Some(i) = ledger.position(id) {
            let _ = ledger.end(on, i, clock, Some(history), false).await;
        }
    }

    /// Resolves `p`'s targets from its `pick_seed` into a fault to start.
    async fn resolve<C: Faultable>(
        &self,
        on: &C,
        p: &PlannedFault,
        holders: &[u32],
        workers: Option<&dyn WorkerProcesses>,
    ) -> Result<Resolved, String> {
        let mut rng = StdRng::seed_from_u64(p.pick_seed);
        let scene = Scene {
            on,
            servers: on.servers(),
            holders,
            workers,
            prefix: &self.prefix,
        };
        // Boxed for the same reason as the books' start and undo.
        Box::pin(p.kind.resolve(&scene, &mut rng)).await
    }
}

#[cfg(test)]
mod tests;
