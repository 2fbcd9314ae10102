//! The machine factor of `lockbench gate --normalize`: per metric, the median over the
//! speed-gated cells of current ÷ baseline. A committed baseline was measured on one machine;
//! CI runs on whichever host it gets, and a slower host moves every cell the same way (on this
//! project's CI machines by up to ×1.9 in handoff latency). Dividing that common factor out
//! leaves what one system or strategy did differently from the rest of the suite; the factor
//! itself is gated against a wide limit, so a uniform slowdown past it still fails.

use std::collections::BTreeMap;

use super::aggregate::CellAggregate;
use super::metric::Metric;

/// Fewer cells than this cannot tell a machine from a regression: no factor is taken.
pub const MIN_CELLS: usize = 3;

/// One metric's machine factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factor {
    /// Median over the cells of current median ÷ baseline median.
    pub ratio: f64,
    /// How many cells it was taken over.
    pub cells: usize,
}

/// The factor of each metric measured (non-zero, finite) on both sides in at least
/// [`MIN_CELLS`] speed-gated cells (cells under a fault schedule are left out); `pairs` holds
/// each current cell with its baseline cell.
pub fn factors(pairs: &[(&CellAggregate, &CellAggregate)]) -> BTreeMap<Metric, Factor> {
    let mut out = BTreeMap::new();
    for m in Metric::ALL {
        let mut ratios: Vec<f64> = pairs
            .iter()
            .filter(|(_, cur)| !cur.under_faults())
            .filter_map(|(base, cur)| {
                let (b, c) = (base.metric(m)?.median, cur.metric(m)?.median);
                let r = c / b;
                (b > 0.0 && c > 0.0 && r.is_finite()).then_some(r)
            })
            .collect();
        if ratios.len() < MIN_CELLS {
            continue;
        }
        ratios.sort_by(f64::total_cmp);
        let n = ratios.len();
        let ratio = if n % 2 == 1 {
            ratios[n / 2]
        } else {
            (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
        };
        out.insert(m, Factor { ratio, cells: n });
    }
    out
}

/// How much worse, in percent, a factor of `ratio` makes `m` (positive: worse).
pub fn worsening_pct(m: Metric, ratio: f64) -> f64 {
    if m.higher_is_better() {
        100.0 * (1.0 - ratio)
    } else {
        100.0 * (ratio - 1.0)
    }
}

/// Whether `ratio` is past `limit` (a factor, e.g. 2: half the throughput or twice the
/// latency) in the worse direction of `m`, and in the better one.
pub fn past_limit(m: Metric, ratio: f64, limit: f64) -> (bool, bool) {
    let (worse, better) = if m.higher_is_better() {
        (ratio < 1.0 / limit, ratio > limit)
    } else {
        (ratio > limit, ratio < 1.0 / limit)
    };
    (worse, better)
}
