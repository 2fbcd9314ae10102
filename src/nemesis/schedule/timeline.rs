//! A schedule expanded for one cell: every occurrence of every fault with its start, its kind
//! (a mixed fault's drawn one) and a seed for picking its nodes, all from the schedule's seed.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{FaultKind, Schedule, Timing};

/// One fault occurrence of a cell's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedFault {
    /// When it starts, from the cell's start.
    pub at: Duration,
    /// What it does (never a composite kind: a mixed fault's occurrence has drawn its kind).
    pub kind: FaultKind,
    /// How long until it is undone (the heal, restart or resume); `at + duration` is inside the
    /// cell.
    pub duration: Duration,
    /// Which `[[faults]]` entry it comes from (0-based, file order).
    pub fault: usize,
    /// Seed for resolving its targets when it starts (which node is `one`, which halves), so the
    /// same timeline picks the same nodes again.
    pub pick_seed: u64,
}

impl PlannedFault {
    /// When it is undone, from the cell's start.
    pub fn end(&self) -> Duration {
        self.at + self.duration
    }
}

/// The seed of fault `index`'s own generator: each entry draws from its own stream, so editing
/// one fault leaves the others' timelines as they were.
fn fault_seed(seed: u64, index: usize) -> u64 {
    // Any odd constant spreads consecutive indices apart; this one is the 64-bit golden ratio.
    seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Schedule {
    /// Every fault occurrence of a cell lasting `cell`, sorted by start (then file order):
    /// deterministic from the schedule's `seed`. An `every` fault repeats at n × every plus its
    /// jitter for as long as it ends inside the cell; a fault that would end after the cell's end
    /// is left out, so the nemesis never has a fault of its own running past the cell. `cell` is
    /// the cell's planned length (a workload's `duration`; for a cell that stops after a number
    /// of acquisitions, a bound the caller chooses).
    pub fn timeline(&self, cell: Duration) -> Vec<PlannedFault> {
        let mut out = Vec::new();
        for (index, spec) in self.faults.iter().enumerate() {
            let mut rng = StdRng::seed_from_u64(fault_seed(self.seed, index));
            let occurrence = |at: Duration, rng: &mut StdRng| PlannedFault {
                at,
                kind: spec.kind.draw(rng),
                duration: spec.duration,
                fault: index,
                pick_seed: rng.random(),
            };
            match spec.timing {
                Timing::At(at) => {
                    if at.checked_add(spec.duration).is_some_and(|end| end <= cell) {
                        out.push(occurrence(at, &mut rng));
                    }
                }
                Timing::Every { every, jitter } => {
                    for n in 1u32.. {
                        let delay =
                            if jitter.is_zero() {
                                Duration::ZERO
                            } else {
                                Duration::from_nanos(rng.random_range(
                                    0..=jitter.as_nanos().min(u64::MAX as u128) as u64,
                                ))
                            };
                        let at = every.checked_mul(n).and_then(|b| b.checked_add(delay));
                        let end = at.and_then(|a| a.checked_add(spec.duration));
                        // jitter ≤ every: later occurrences start no earlier, so none fits either.
                        let (Some(at), Some(end)) = (at, end) else {
                            break;
                        };
                        if end > cell {
                            break;
                        }
                        out.push(occurrence(at, &mut rng));
                    }
                }
            }
        }
        out.sort_by_key(|p| (p.at, p.fault));
        out
    }

    /// The shortest cell whose timeline is sure to hold a fault, whatever the jitter draws:
    /// the earliest a fault can be over (`start + duration`, or `every + jitter + duration`).
    /// `None` for a schedule without faults.
    pub fn shortest_cell(&self) -> Option<Duration> {
        self.faults
            .iter()
            .filter_map(|f| match f.timing {
                Timing::At(at) => at.checked_add(f.duration),
                Timing::Every { every, jitter } => every
                    .checked_add(jitter)
                    .and_then(|e| e.checked_add(f.duration)),
            })
            .min()
    }
}
