//! The machine factor of `lockbench gate --normalize`: per metric, the median over the
//! speed-gated cells of current ÷ baseline. A committed baseline was measured on one machine;
//! CI runs on whichever host it gets, and a slower host moves every cell the same way (on this
//! project's CI machines by up to ×1.9 in handoff latency). Dividing that common factor out
//! leaves what one system or strategy did differently from the rest of the suite; the factor
//! itself is gated against a wide limit, so a uniform slowdown past it still fails.
//!
//! A host does not move every cell by the same factor, though: the herd's storms of woken
//! clients are CPU-bound, so a host with less CPU to give slows herd cells more than
//! predecessor cells. `--normalize-by strategy` ([`Grouping::Strategy`]) takes one factor per
//! strategy, over that strategy's cells, so each cell is held against cells that spend their
//! time the way it does.

use std::collections::BTreeMap;

use super::aggregate::CellAggregate;
use super::metric::Metric;

/// Fewer cells than this cannot tell a machine from a regression: no factor is taken.
pub const MIN_CELLS: usize = 3;

/// Which cells share a machine factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    /// One factor per metric over every speed-gated cell.
    #[default]
    Suite,
    /// One factor per metric and strategy, over that strategy's speed-gated cells; a strategy
    /// with fewer than [`MIN_CELLS`] cells measuring a metric takes the suite's factor.
    Strategy,
}

impl Grouping {
    /// `suite` or `strategy`, as `--normalize-by` takes it.
    pub fn parse(text: &str) -> Result<Grouping, String> {
        match text.trim() {
            "suite" => Ok(Grouping::Suite),
            "strategy" => Ok(Grouping::Strategy),
            other => Err(format!(
                "'{other}' is not a grouping: write suite (one machine factor for every cell) \
                 or strategy (one per waiting strategy)"
            )),
        }
    }

    /// The group `cell` takes its factor from: `None` for the whole suite.
    fn group_of(self, cell: &CellAggregate) -> Option<&'static str> {
        match self {
            Grouping::Suite => None,
            Grouping::Strategy => Some(cell.id.strategy.name()),
        }
    }
}

/// One metric's machine factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factor {
    /// Median over the cells of current median ÷ baseline median.
    pub ratio: f64,
    /// How many cells it was taken over.
    pub cells: usize,
}

/// A group's factors: the suite's (`group: None`) or one strategy's.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupFactors {
    /// The strategy, or `None` for the whole suite.
    pub group: Option<&'static str>,
    /// The factor of each metric measured in at least [`MIN_CELLS`] of the group's cells.
    pub factors: BTreeMap<Metric, Factor>,
}

/// Every factor a comparison divides out.
#[derive(Debug, Clone, PartialEq)]
pub struct Factors {
    /// How the cells were grouped.
    pub grouping: Grouping,
    /// The suite's factors first, then each group's (by strategy name) under
    /// [`Grouping::Strategy`].
    pub groups: Vec<GroupFactors>,
}

impl Factors {
    /// The factor `cell`'s metric `m` is divided by: its group's, else the suite's, else none
    /// (fewer than [`MIN_CELLS`] cells measured it).
    pub fn of(&self, cell: &CellAggregate, m: Metric) -> Option<Factor> {
        let group = self.grouping.group_of(cell);
        let own = self
            .groups
            .iter()
            .find(|g| g.group.is_some() && g.group == group)
            .and_then(|g| g.factors.get(&m));
        own.or_else(|| self.suite().and_then(|g| g.factors.get(&m)))
            .copied()
    }

    /// The suite's factors.
    pub fn suite(&self) -> Option<&GroupFactors> {
        self.groups.iter().find(|g| g.group.is_none())
    }

    /// Whether no factor at all was taken.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.factors.is_empty())
    }
}

/// The factors of `pairs` (each current cell with its baseline cell) under `grouping`: the
/// suite's always, and each strategy's under [`Grouping::Strategy`]. Cells under a fault
/// schedule are left out.
pub fn factors(pairs: &[(&CellAggregate, &CellAggregate)], grouping: Grouping) -> Factors {
    let mut groups = vec![GroupFactors {
        group: None,
        factors: factors_over(pairs.iter()),
    }];
    if grouping == Grouping::Strategy {
        let names: std::collections::BTreeSet<&'static str> = pairs
            .iter()
            .filter_map(|(_, cur)| grouping.group_of(cur))
            .collect();
        for name in names {
            let members = pairs
                .iter()
                .filter(|(_, cur)| grouping.group_of(cur) == Some(name));
            let factors = factors_over(members);
            groups.push(GroupFactors {
                group: Some(name),
                factors,
            });
        }
    }
    Factors { grouping, groups }
}

/// The factor of each metric measured (non-zero, finite) on both sides in at least
/// [`MIN_CELLS`] of `pairs`' speed-gated cells.
fn factors_over<'a, 'b: 'a>(
    pairs: impl Iterator<Item = &'a (&'b CellAggregate, &'b CellAggregate)>,
) -> BTreeMap<Metric, Factor> {
    let pairs: Vec<_> = pairs.filter(|(_, cur)| !cur.under_faults()).collect();
    let mut out = BTreeMap::new();
    for m in Metric::ALL {
        let mut ratios: Vec<f64> = pairs
            .iter()
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
