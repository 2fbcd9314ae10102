//! Statistics of one cell (system × strategy × workload), computed only from its history.
//!
//! An operation counts when it starts at or after the warm-up (for an open-loop acquire, its
//! intended start); failures, timeouts, unknown outcomes and lost leases are counted, never
//! dropped. The result is a [`CellSummary`] (written as `summary.json`) plus the histograms
//! behind it, so exporters can write `acquire.hgrm` or merge cells.

pub mod fairness;
mod holds;
pub mod latency;
mod outcomes;
pub mod pacing;
pub mod series;

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
/// costs, holds and handoffs ([`holds::Holds`]), fairness ([`FifoTracker`], [`QueueOrder`]),
/// pacing ([`pacing::Pacing`]) and the failed outcomes ([`outcomes::Outcomes`]).
pub fn analyze(events: &Events, cell: &CellInfo) -> Analysis {
    analyze_with(events, &events.operations(), cell)
}

/// [`analyze`] with the events' operations already paired ([`Events::operations`] of the same
/// events): the checkers pair them too, and a long history's operations are large.
pub fn analyze_with(events: &Events, ops: &Operations, cell: &CellInfo) -> Analysis {
    let order = in_time_order(events);
    let warmup_us = cell.warmup.as_micros() as u64;
    let end_us = cell
        .end_us
        .unwrap_or_else(|| events.iter().map(|e| e.t_us()).max().unwrap_or(0));

    // The nemesis' fault operations are not the clients'.
    let start_us = |op: &Operation| {
        let inv = events.at(op.invoke);
        match op.op {
            Op::Acquire => inv.intended_us().unwrap_or(inv.t_us()),
            _ => inv.t_us(),
        }
    };
    // The operation each outcome ends, by the outcome's index: 4 bytes an event, where a map
    // of outcomes was the largest thing statistics held for a long history.
    let mut ended_by: Vec<u32> = vec![u32::MAX; events.len()];
    let mut open: Vec<(Op, u64)> = Vec::new();
    for (k, op) in ops.ops.iter().enumerate() {
        if op.process.client().is_none() {
            continue;
        }
        match op.outcome {
            Some(o) => ended_by[o] = u32::try_from(k).expect("fewer than 2^32 operations"),
            None => open.push((op.op, start_us(op))),
        }
    }
    let started = |outcome: usize| {
        let op = ops.ops.get(ended_by[outcome] as usize)?;
        let inv = events.at(op.invoke);
        Some(Started {
            key: inv.key(),
            invoke_us: inv.t_us(),
            start_us: start_us(op),
        })
    };
    let unmatched = ops
        .unmatched
        .iter()
        .filter(|&&i| events.at(i).client().is_some())
        .count() as u64;

    let (mut acquire, mut release) = (new_histogram(), new_histogram());
    let mut holds = holds::Holds::new(warmup_us);
    let mut series = SeriesBuilder::default();
    let mut fifo = FifoTracker::default();
    let mut queue = QueueOrder::default();
    let mut pacing = pacing::Pacing::default();
    let mut outcomes = outcomes::Outcomes::default();
    let mut per_client: Vec<u64> = vec![0; cell.id.clients as usize];
    let mut costs = AttemptCosts::default();
    let (mut fifo_inversions, mut max_wait, mut lost_leases) = (0u64, 0u64, 0u64);

    for i in order {
        let e = events.at(i);
        let t = e.t_us();
        let Some(client) = e.client() else {
            continue;
        };
        match (e.op(), e.kind()) {
            // The resource's reads and writes are the checkers' concern, not timing's.
            (Op::Fault | Op::Read | Op::Write, _) => {}
            (Op::LeaseLost, _) => lost_leases += u64::from(t >= warmup_us),
            (Op::Acquire, EventKind::Invoke) => {
                fifo.invoke(e.key(), client, t);
                pacing.acquire_invoke(&e, warmup_us);
            }
            (Op::Release, EventKind::Invoke) => {
                if holds.release_invoked(client, e.key(), t) {
                    pacing.hold_counted(&e);
                }
            }
            (op, kind) => {
                pacing.outcome(&e);
                let Some(s) = started(i) else {
                    continue; // an outcome without its invoke: counted as unmatched
                };
                let measured = s.start_us >= warmup_us;
                let took = t.saturating_sub(s.start_us);
                match (op, kind) {
                    (Op::Acquire, _) => {
                        if measured {
                            max_wait = max_wait.max(took);
                            costs.add(&e);
                        }
                        if kind != EventKind::Ok {
                            fifo.gave_up(s.key, client);
                            if measured {
                                series.failed(t);
                                outcomes.failed(&e);
                            }
                            continue;
                        }
                        let overtaken = fifo.granted(s.key, client);
                        queue.granted(s.key, s.invoke_us, t, e.queue_position(), measured);
                        holds.granted(client, s.key, s.invoke_us, t);
                        if measured {
                            record(&mut acquire, took);
                            series.acquired(t, took);
                            fifo_inversions += overtaken;
                            if per_client.len() <= client as usize {
                                per_client.resize(client as usize + 1, 0);
                            }
                            per_client[client as usize] += 1;
                        }
                    }
                    (_, EventKind::Ok) if measured => record(&mut release, took),
                    (_, EventKind::Ok) => {}
                    _ if measured => outcomes.failed(&e),
                    _ => {}
                }
            }
        }
    }

    // Waits still open at the end are waits too: an acquire stuck through an outage is the
    // longest wait of all.
    let mut unfinished = 0;
    for (op, start_us) in open {
        if start_us >= warmup_us {
            unfinished += 1;
            if op == Op::Acquire {
                max_wait = max_wait.max(end_us.saturating_sub(start_us));
            }
        }
    }

    let (fifo_basis, fifo_inversions) = if queue.usable() {
        (FifoBasis::QueuePosition, queue.inversions())
    } else {
        (FifoBasis::InvokeTime, fifo_inversions)
    };
    let paced = pacing.summary();
    let duration_s = end_us.saturating_sub(warmup_us) as f64 / 1e6;
    let acquisitions = acquire.len();
    let per_acquisition = |sum: u64| (acquisitions > 0).then(|| sum as f64 / acquisitions as f64);
    let summary = CellSummary {
        schema_version: SCHEMA_VERSION,
        id: cell.id.clone(),
        acquisitions,
        duration_s,
        throughput_per_s: if duration_s > 0.0 {
            acquisitions as f64 / duration_s
        } else {
            0.0
        },
        acquire_latency_us: LatencySummary::of(&acquire),
        handoff_latency_us: LatencySummary::of(&holds.handoff),
        hold_time_us: LatencySummary::of(&holds.hold),
        hold_requested_us: paced.hold_requested,
        think_requested_us: paced.think_requested,
        think_time_us: paced.think_measured,
        arrival_lag_us: paced.arrival_lag,
        release_latency_us: LatencySummary::of(&release),
        wakeups_per_acquisition: costs.wakeups.and_then(per_acquisition),
        requests_per_acquisition: costs.requests.and_then(per_acquisition),
        wakeups_total: costs.wakeups,
        requests_total: costs.requests.unwrap_or(0),
        fallback_polls: costs.fallback_polls,
        fifo_inversions,
        fifo_basis,
        jain_fairness: jain_index(&per_client),
        max_wait_us: max_wait,
        timeouts: outcomes.timeouts,
        errors: outcomes.errors,
        error_messages: outcomes.error_messages,
        indeterminate: outcomes.indeterminate,
        lost_leases,
        unfinished,
        unmatched,
        per_second: series.finish(warmup_us, end_us),
        safety: None,
        faults: Vec::new(),
        settle_ms: cell.settle_ms,
    };
    Analysis {
        summary,
        acquire,
        handoff: holds.handoff,
        hold: holds.hold,
        release,
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
