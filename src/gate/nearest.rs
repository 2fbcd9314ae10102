//! Several baselines, one per kind of host (`lockbench gate --normalize --baseline A --baseline
//! B`): the run is compared with the baseline measured on the host most like its own, the one
//! whose machine factors ([`machine::factors`]) lie nearest 1.
//!
//! One factor per strategy carries a baseline across hosts that differ by a third, not across
//! hosts that differ twofold, because the cells do not scale alike. On a 2-core host about twice
//! as fast as the one `results/baselines/ci-smoke.json` was made on, the herd cells of ZooKeeper,
//! etcd and Redlock gained ×2.4–×3.1 in throughput and Redis's ×1.4 (its one server thread
//! bounds it, not the clients' CPU). Against the herd's factor of ×2.5, Redis herd came out at
//! −46 %, a regression no code had made.

use super::aggregate::CellAggregate;
use super::baseline::Baseline;
use super::machine::{self, Grouping};

/// How far the host of `current` is from the host of `baseline`: the mean, over the suite's
/// machine factors, of |ln factor| (0 for the same host; ln 2 ≈ 0.69 for one twice as fast or
/// slow in every metric). `None` when fewer than [`machine::MIN_CELLS`] cells are on both sides.
pub fn distance(baseline: &Baseline, current: &[CellAggregate]) -> Option<f64> {
    let pairs: Vec<_> = current
        .iter()
        .filter_map(|c| baseline.cells.iter().find(|b| b.id == c.id).map(|b| (b, c)))
        .collect();
    let factors = machine::factors(&pairs, Grouping::Suite);
    let suite = factors.suite()?;
    if suite.factors.is_empty() {
        return None;
    }
    let sum: f64 = suite.factors.values().map(|f| f.ratio.ln().abs()).sum();
    Some(sum / suite.factors.len() as f64)
}

/// The index in `baselines` of the one nearest the host of `current` (by [`distance`]), with
/// every baseline's distance. A baseline with no distance is never nearer than one with a
/// distance; with no distance at all, the first is taken.
pub fn nearest(baselines: &[Baseline], current: &[CellAggregate]) -> (usize, Vec<Option<f64>>) {
    let distances: Vec<Option<f64>> = baselines.iter().map(|b| distance(b, current)).collect();
    let best = distances
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.map(|d| (i, d)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(0, |(i, _)| i);
    (best, distances)
}
