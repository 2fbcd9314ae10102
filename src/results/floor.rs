//! The handoff floor: the bare minimum of one handoff on a cluster, measured with the same
//! client library on the same cluster in the same run, before its cells. Holder A releases
//! while waiter B already waits on it; the sample is the time from A sending its release to B
//! holding the lock by the protocol's own fewest steps (each system's chain is in
//! [`HandoffFloor::chain`]). A cell's handoff p50 over the floor's p50
//! (`handoff_over_floor`) says how much of the handoff is the recipe's and how much the
//! protocol's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a probe measured: one duration per sample that completed, and how many did not
/// (a timeout, an error, a grant refused), counted, never dropped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FloorSamples {
    /// From A's release sent to B's lock confirmed, per completed sample.
    pub times: Vec<Duration>,
    /// Samples that did not complete.
    pub failed: u64,
    /// Samples run before these and left out (the servers' warm-up).
    pub warmup: u64,
}

/// The floor of one cluster, as `cell.json` records it for each of its cells and
/// `summary.json` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffFloor {
    /// The median sample, µs.
    pub p50_us: u64,
    /// The 99th percentile, µs.
    pub p99_us: u64,
    /// Samples that completed.
    pub samples: u64,
    /// Samples that did not complete (counted, not in the percentiles).
    pub failed: u64,
    /// Samples run first and left out: a server just started is slower for its first
    /// requests than by the time the cells run.
    #[serde(default)]
    pub warmup: u64,
    /// What one sample measures, step by step.
    pub chain: String,
}

impl HandoffFloor {
    /// The floor of `samples`, whose chain is `chain`; `None` when no sample completed.
    pub fn of(samples: &FloorSamples, chain: &str) -> Option<HandoffFloor> {
        let mut us: Vec<u64> = samples.times.iter().map(|d| d.as_micros() as u64).collect();
        if us.is_empty() {
            return None;
        }
        us.sort_unstable();
        Some(HandoffFloor {
            p50_us: nearest_rank(&us, 0.50),
            p99_us: nearest_rank(&us, 0.99),
            samples: us.len() as u64,
            failed: samples.failed,
            warmup: samples.warmup,
            chain: chain.to_string(),
        })
    }

    /// `handoff_p50_us` over the floor's p50; `None` without a handoff to compare.
    pub fn ratio(&self, handoff_p50_us: u64, handoffs: u64) -> Option<f64> {
        (handoffs > 0 && self.p50_us > 0).then(|| handoff_p50_us as f64 / self.p50_us as f64)
    }
}

/// The nearest-rank percentile `q` of sorted, non-empty `sorted`.
fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The floor a `cell.json`'s text records (`handoff_floor`); `None` when it has none.
pub fn of_cell_json(cell_json: &str) -> Option<HandoffFloor> {
    let file: serde_json::Value = serde_json::from_str(cell_json).ok()?;
    serde_json::from_value(file.get("handoff_floor")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> FloorSamples {
        FloorSamples {
            times: v.iter().map(|&m| Duration::from_millis(m)).collect(),
            failed: 2,
            warmup: 5,
        }
    }

    #[test]
    fn percentiles_are_nearest_rank_and_failures_are_counted_apart() {
        let f = HandoffFloor::of(&ms(&(1..=100).rev().collect::<Vec<_>>()), "x").unwrap();
        assert_eq!((f.p50_us, f.p99_us), (50_000, 99_000));
        assert_eq!((f.samples, f.failed, f.warmup), (100, 2, 5));
        let one = HandoffFloor::of(&ms(&[3]), "x").unwrap();
        assert_eq!((one.p50_us, one.p99_us), (3_000, 3_000));
        assert_eq!(HandoffFloor::of(&ms(&[]), "x"), None);
    }

    #[test]
    fn the_ratio_needs_a_handoff_and_reads_back_from_cell_json() {
        let f = HandoffFloor::of(&ms(&[2, 2, 4]), "delete, event, read").unwrap();
        assert_eq!(f.ratio(5_000, 10), Some(2.5));
        assert_eq!(f.ratio(0, 0), None);
        let text = serde_json::json!({ "system": "etcd", "handoff_floor": f }).to_string();
        assert_eq!(of_cell_json(&text), Some(f));
        assert_eq!(of_cell_json("{\"system\": \"etcd\"}"), None);
    }
}
