//! A read-write lock's readers and writers apart (`summary.json`'s `rwlock`): how many of each
//! were granted and how long they took, how long writers waited (starvation), and how many
//! readers held a key together.
//!
//! An acquisition's mode is its outcome's `mode`, else its invoke's; no mode at all is a write
//! (exclusive), so an odd history is counted, never dropped. Latencies and waits count, as the
//! other statistics do, the acquisitions that started (intended start in open loop, invoke
//! otherwise) in the measured window. A wait is that start → the outcome, whatever it was: a
//! writer that timed out waited its whole timeout, one still waiting at the end waited to the
//! end (as `max_wait_us`).

use hdrhistogram::Histogram;
use rustc_hash::FxHashSet as HashSet;

use super::occupancy::{Hold, occupancy};
use super::{measured_window, new_histogram, op_start_us, per_second, record};
use crate::history::{EventKind, Events, Mode, Op, Operations, Section};
use crate::results::{CellInfo, LatencySummary, ModeFigures, RwLockFigures};

/// What one mode's acquisitions accumulate.
struct ModeFold {
    latency: Histogram<u64>,
    waits: Histogram<u64>,
    max_wait: u64,
}

impl ModeFold {
    fn new() -> ModeFold {
        ModeFold {
            latency: new_histogram(),
            waits: new_histogram(),
            max_wait: 0,
        }
    }

    fn waited(&mut self, us: u64) {
        record(&mut self.waits, us);
        self.max_wait = self.max_wait.max(us);
    }

    fn figures(&self, duration_s: f64) -> ModeFigures {
        let acquisitions = self.latency.len();
        ModeFigures {
            acquisitions,
            per_s: per_second(acquisitions, duration_s),
            latency_us: LatencySummary::of(&self.latency),
        }
    }
}

/// The 99th percentile of `h`, 0 when empty.
fn p99(h: &Histogram<u64>) -> u64 {
    LatencySummary::of(h).p99
}

/// The read-write lock's figures over the measured window of `cell`, from the history's events,
/// their operations ([`Events::operations`]) and critical sections ([`Events::sections`]).
pub fn figures(
    events: &Events,
    ops: &Operations,
    sections: &[Section],
    cell: &CellInfo,
) -> RwLockFigures {
    let window = measured_window(events, cell);
    let (mut readers, mut writers) = (ModeFold::new(), ModeFold::new());
    // The acquire `ok`s that granted a read, for the holds.
    let mut read_grants: HashSet<usize> = HashSet::default();
    let mut keys: HashSet<&str> = HashSet::default();
    for op in &ops.ops {
        if op.op != Op::Acquire || op.process.client().is_none() {
            continue;
        }
        let invoke = events.at(op.invoke);
        keys.insert(invoke.key());
        let outcome = op.outcome.map(|o| (o, events.at(o)));
        let mode = outcome.and_then(|(_, e)| e.mode()).or(invoke.mode());
        let reads = Mode::is_read(mode);
        if let Some((o, e)) = outcome
            && reads
            && e.kind() == EventKind::Ok
        {
            read_grants.insert(o);
        }
        let start = op_start_us(events, op);
        if start < window.0 {
            continue;
        }
        let fold = if reads { &mut readers } else { &mut writers };
        match outcome {
            Some((_, e)) => {
                let took = e.t_us().saturating_sub(start);
                if e.kind() == EventKind::Ok {
                    record(&mut fold.latency, took);
                }
                fold.waited(took);
            }
            None => fold.waited(window.1.saturating_sub(start)),
        }
    }
    let reading = sections
        .iter()
        .filter(|s| read_grants.contains(&s.acquired_at()))
        .map(|s| Hold {
            key: s.key(events),
            from_us: s.acquired_us(events),
            to_us: s.released_us(events).unwrap_or(window.1),
        });
    let shared = occupancy(reading, keys.len(), window);
    let duration_s = window.1.saturating_sub(window.0) as f64 / 1e6;
    RwLockFigures {
        readers: readers.figures(duration_s),
        writers: writers.figures(duration_s),
        writer_wait_max_us: writers.max_wait,
        writer_wait_p99_us: p99(&writers.waits),
        reader_wait_p99_us: p99(&readers.waits),
        concurrent_readers_mean: shared.mean,
        concurrent_readers_max: shared.max,
    }
}
