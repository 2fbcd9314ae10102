//! Statistics of one cell (system × strategy × workload), computed only from its history.
//!
//! An operation counts when it starts at or after the warm-up (for an open-loop acquire, its
//! intended start); failures, timeouts, unknown outcomes and lost leases are counted, never
//! dropped. The result is a [`CellSummary`] (written as `summary.json`) plus the histograms
//! behind it, so exporters can write `acquire.hgrm` or merge cells.

pub mod fairness;
mod holds;
pub mod latency;
pub mod occupancy;
mod outcomes;
pub mod pacing;
pub mod rates;
#[cfg(test)]
mod rates_tests;
pub mod reentry;
pub mod rwlock;
pub mod semaphore;
pub mod series;
pub mod try_lock;

use hdrhistogram::Histogram;

use crate::history::{EventKind, EventRef, Events, Op, Operation, Operations, in_time_order};
// The schema types are `results`' (below statistics); re-exported here for the paths
// callers outside the crate use.
pub use crate::results::{CellInfo, CellSummary, SCHEMA_VERSION};
use crate::results::{FifoBasis, LatencySummary};

pub use fairness::{FifoTracker, QueueOrder, jain_index};
pub use latency::{new_histogram, record, write_hgrm, write_hgrm_file};
pub use series::SeriesBuilder;

/// A summary and the histograms it was read from.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The numbers for `summary.json`.
    pub summary: CellSummary,
    /// Acquire latency, µs (write it with [`write_hgrm_file`] as `acquire.hgrm`).
    pub acquire: Histogram<u64>,
    /// Handoff latency, µs.
    pub handoff: Histogram<u64>,
    /// Hold time, µs.
    pub hold: Histogram<u64>,
    /// Release latency, µs.
    pub release: Histogram<u64>,
}

/// Where an operation started, for its outcome: its key, its invoke time, and where its latency
/// counts from (the intended start in open loop, the invoke otherwise).
struct Started<'a> {
    key: &'a str,
    invoke_us: u64,
    start_us: u64,
}

/// What the measured acquire attempts cost, granted or not.
#[derive(Debug, Default)]
struct AttemptCosts {
    /// `None` until an outcome carries a wake-up count: absent counts stay absent, never 0.
    wakeups: Option<u64>,
    requests: Option<u64>,
    fallback_polls: u64,
}

impl AttemptCosts {
    fn add(&mut self, outcome: &EventRef) {
        if let Some(w) = outcome.wakeups() {
            *self.wakeups.get_or_insert(0) += w;
        }
        if let Some(r) = outcome.requests() {
            *self.requests.get_or_insert(0) += r;
        }
        self.fallback_polls += outcome.fallback_polls().unwrap_or(0);
    }
}

/// Computes a cell's statistics from its events (in any order; they are read in time order).
///
/// Events are paired into operations once ([`Events::operations`]); the folds below then read the
/// events in time order, each outcome with where its operation started: waits and their
/// costs, holds and handoffs (`holds::Holds`), fairness ([`FifoTracker`], [`QueueOrder`]),
/// pacing ([`pacing::Pacing`]) and the failed outcomes (`outcomes::Outcomes`).
pub fn analyze(events: &Events, cell: &CellInfo) -> Analysis {
    analyze_with(events, &events.operations(), cell)
}

/// [`analyze`] with the events' operations already paired ([`Events::operations`] of the same
/// events): the checkers pair them too, and a long history's operations are large.
pub fn analyze_with(events: &Events, ops: &Operations, cell: &CellInfo) -> Analysis {
    let (warmup_us, end_us) = measured_window(events, cell);
    let index = OpIndex::of(events, ops);
    let mut fold = Fold::new(warmup_us, cell.id.clients as usize);
    for i in in_time_order(events) {
        let e = events.at(i);
        if e.client().is_some() {
            fold.event(&e, || index.started(events, ops, i));
        }
    }
    let unfinished = fold.open_waits(&index.open, end_us);
    let unmatched = ops
        .unmatched
        .iter()
        .filter(|&&i| events.at(i).client().is_some())
        .count() as u64;
    fold.finish(cell, end_us, unfinished, unmatched)
}

/// The measured window of `cell`, µs: from the warm-up's end to the cell's end (its last
/// event when `cell.json` does not say).
fn measured_window(events: &Events, cell: &CellInfo) -> (u64, u64) {
    let warmup_us = cell.warmup.as_micros() as u64;
    let end_us = cell
        .end_us
        .unwrap_or_else(|| events.iter().map(|e| e.t_us()).max().unwrap_or(0));
    (warmup_us, end_us)
}

/// `count` per second of a window `duration_s` long; 0 for an empty window.
fn per_second(count: u64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        count as f64 / duration_s
    } else {
        0.0
    }
}

/// Where an operation started for statistics: an acquire at its intended start (open loop),
/// anything else at its invoke.
fn op_start_us(events: &Events, op: &Operation) -> u64 {
    let inv = events.at(op.invoke);
    match op.op {
        Op::Acquire => inv.intended_us().unwrap_or(inv.t_us()),
        _ => inv.t_us(),
    }
}

/// The clients' operations indexed for the fold: which operation each outcome ends, and the
/// operations still open at the end (the nemesis' fault operations are not the clients').
struct OpIndex {
    /// The operation each outcome ends, by the outcome's index: 4 bytes an event, where a map
    /// of outcomes was the largest thing statistics held for a long history.
    ended_by: Vec<u32>,
    /// Each open operation and where it started.
    open: Vec<(Op, u64)>,
}

impl OpIndex {
    fn of(events: &Events, ops: &Operations) -> OpIndex {
        let mut ended_by: Vec<u32> = vec![u32::MAX; events.len()];
        let mut open: Vec<(Op, u64)> = Vec::new();
        for (k, op) in ops.ops.iter().enumerate() {
            if op.process.client().is_none() {
                continue;
            }
            match op.outcome {
                Some(o) => ended_by[o] = u32::try_from(k).expect("fewer than 2^32 operations"),
                None => open.push((op.op, op_start_us(events, op))),
            }
        }
        OpIndex { ended_by, open }
    }

    /// Where the operation that `outcome` ends started; `None` for an outcome without its
    /// invoke (counted as unmatched).
    fn started<'e>(
        &self,
        events: &'e Events,
        ops: &Operations,
        outcome: usize,
    ) -> Option<Started<'e>> {
        let op = ops.ops.get(self.ended_by[outcome] as usize)?;
        let inv = events.at(op.invoke);
        Some(Started {
            key: inv.key(),
            invoke_us: inv.t_us(),
            start_us: op_start_us(events, op),
        })
    }
}

/// What one pass over the clients' events in time order accumulates.
struct Fold {
    warmup_us: u64,
    acquire: Histogram<u64>,
    release: Histogram<u64>,
    holds: holds::Holds,
    series: SeriesBuilder,
    fifo: FifoTracker,
    queue: QueueOrder,
    pacing: pacing::Pacing,
    outcomes: outcomes::Outcomes,
    per_client: Vec<u64>,
    costs: AttemptCosts,
    fifo_inversions: u64,
    max_wait: u64,
    lost_leases: u64,
}

impl Fold {
    fn new(warmup_us: u64, clients: usize) -> Fold {
        Fold {
            warmup_us,
            acquire: new_histogram(),
            release: new_histogram(),
            holds: holds::Holds::new(warmup_us),
            series: SeriesBuilder::default(),
            fifo: FifoTracker::default(),
            queue: QueueOrder::default(),
            pacing: pacing::Pacing::default(),
            outcomes: outcomes::Outcomes::default(),
            per_client: vec![0; clients],
            costs: AttemptCosts::default(),
            fifo_inversions: 0,
            max_wait: 0,
            lost_leases: 0,
        }
    }

    /// One client event; `started` finds where the operation an outcome ends began.
    fn event<'e>(&mut self, e: &EventRef<'e>, started: impl FnOnce() -> Option<Started<'e>>) {
        let t = e.t_us();
        let Some(client) = e.client() else {
            return;
        };
        match (e.op(), e.kind()) {
            // The resource's reads and writes are the checkers' concern, not timing's.
            (Op::Fault | Op::Read | Op::Write, _) => {}
            (Op::LeaseLost, _) => self.lost_leases += u64::from(t >= self.warmup_us),
            (Op::Acquire, EventKind::Invoke) => {
                let reads = crate::history::Mode::is_read(e.mode());
                self.fifo.invoke(e.key(), client, t, reads);
                self.pacing.acquire_invoke(e, self.warmup_us);
            }
            (Op::Release, EventKind::Invoke) => {
                if self.holds.release_invoked(client, e.key(), t) {
                    self.pacing.hold_counted(e);
                }
            }
            (op, kind) => {
                self.pacing.outcome(e);
                // An outcome without its invoke is counted as unmatched.
                if let Some(s) = started() {
                    self.outcome(e, client, op, kind, &s);
                }
            }
        }
    }

    /// The outcome `e` of client `client`'s operation `op`, which started as `s` says.
    fn outcome(&mut self, e: &EventRef, client: u32, op: Op, kind: EventKind, s: &Started) {
        let t = e.t_us();
        let measured = s.start_us >= self.warmup_us;
        let took = t.saturating_sub(s.start_us);
        match (op, kind) {
            (Op::Acquire, EventKind::Ok) => {
                if measured {
                    self.max_wait = self.max_wait.max(took);
                    self.costs.add(e);
                }
                let overtaken = self.fifo.granted(s.key, client);
                let reads = crate::history::Mode::is_read(e.mode());
                let position = e.queue_position();
                self.queue
                    .granted(s.key, s.invoke_us, t, position, (measured, reads));
                self.holds.granted(client, s.key, s.invoke_us, t);
                if measured {
                    record(&mut self.acquire, took);
                    self.series.acquired(t, took);
                    self.fifo_inversions += overtaken;
                    if self.per_client.len() <= client as usize {
                        self.per_client.resize(client as usize + 1, 0);
                    }
                    self.per_client[client as usize] += 1;
                }
            }
            (Op::Acquire, _) => {
                if measured {
                    self.max_wait = self.max_wait.max(took);
                    self.costs.add(e);
                }
                self.fifo.gave_up(s.key, client);
                if measured {
                    self.series.failed(t);
                    self.outcomes.failed(e);
                }
            }
            (_, EventKind::Ok) if measured => record(&mut self.release, took),
            (_, EventKind::Ok) => {}
            _ if measured => self.outcomes.failed(e),
            _ => {}
        }
    }

    /// Waits still open at the end are waits too: an acquire stuck through an outage is the
    /// longest wait of all. Returns how many measured operations were left open.
    fn open_waits(&mut self, open: &[(Op, u64)], end_us: u64) -> u64 {
        let mut unfinished = 0;
        for &(op, start_us) in open {
            if start_us >= self.warmup_us {
                unfinished += 1;
                if op == Op::Acquire {
                    self.max_wait = self.max_wait.max(end_us.saturating_sub(start_us));
                }
            }
        }
        unfinished
    }

    /// The summary and the histograms behind it.
    fn finish(self, cell: &CellInfo, end_us: u64, unfinished: u64, unmatched: u64) -> Analysis {
        let warmup_us = self.warmup_us;
        let (fifo_basis, fifo_inversions) = if self.queue.usable() {
            (FifoBasis::QueuePosition, self.queue.inversions())
        } else {
            (FifoBasis::InvokeTime, self.fifo_inversions)
        };
        let paced = self.pacing.summary();
        let duration_s = end_us.saturating_sub(warmup_us) as f64 / 1e6;
        let acquisitions = self.acquire.len();
        let per_acquisition =
            |sum: u64| (acquisitions > 0).then(|| sum as f64 / acquisitions as f64);
        let (costs, outcomes, holds) = (self.costs, self.outcomes, self.holds);
        let summary = CellSummary {
            schema_version: SCHEMA_VERSION,
            id: cell.id.clone(),
            acquisitions,
            duration_s,
            warmup_us,
            throughput_per_s: per_second(acquisitions, duration_s),
            acquire_latency_us: LatencySummary::of(&self.acquire),
            handoff_latency_us: LatencySummary::of(&holds.handoff),
            hold_time_us: LatencySummary::of(&holds.hold),
            hold_requested_us: paced.hold_requested,
            think_requested_us: paced.think_requested,
            think_time_us: paced.think_measured,
            arrival_lag_us: paced.arrival_lag,
            release_latency_us: LatencySummary::of(&self.release),
            wakeups_per_acquisition: costs.wakeups.and_then(per_acquisition),
            requests_per_acquisition: costs.requests.and_then(per_acquisition),
            wakeups_total: costs.wakeups,
            requests_total: costs.requests.unwrap_or(0),
            fallback_polls: costs.fallback_polls,
            fifo_inversions,
            fifo_basis,
            jain_fairness: jain_index(&self.per_client),
            max_wait_us: self.max_wait,
            timeouts: outcomes.timeouts,
            errors: outcomes.errors,
            error_messages: outcomes.error_messages,
            indeterminate: outcomes.indeterminate,
            lost_leases: self.lost_leases,
            unfinished,
            unmatched,
            per_second: self.series.finish(warmup_us, end_us),
            safety: None,
            faults: Vec::new(),
            settle_ms: cell.settle_ms,
            reentry: None,
            rwlock: None,
            semaphore: None,
            try_lock: None,
            client_latency_us: None,
            client_jitter_us: None,
            peer_latency_us: None,
            peer_jitter_us: None,
            handoff_floor: None,
            handoff_over_floor: None,
            server_version: cell.server_version.clone(),
        };
        Analysis {
            summary,
            acquire: self.acquire,
            handoff: holds.handoff,
            hold: holds.hold,
            release: self.release,
        }
    }
}

/// [`analyze`] of events written out as `Event`s (hand-made histories in tests).
#[cfg(test)]
pub(crate) fn analyze_events(events: &[crate::history::Event], cell: &CellInfo) -> Analysis {
    analyze(&Events::from(events), cell)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fidelity_tests;

#[cfg(test)]
mod kind_tests;
