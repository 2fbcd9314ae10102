//! One cell's repetitions taken together: each gated metric's median and spread, and the
//! safety verdicts with the first violation's evidence. The run's `summary.json` keeps these
//! (as `repeated`) beside every repetition's own summary; baselines are made of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metric::Metric;
use super::spread::Spread;
use crate::plan::CellId;
use crate::results::CellSummary;
use crate::results::Expect;
use crate::results::SafetyVerdict;
use crate::stats::rates::{Rates, rates};

/// A cell over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellAggregate {
    /// The cell's id without the repetition (`<system>-<strategy>-<workload>[-<chaos>]-c<n>`).
    pub cell: String,
    /// The same, as coordinates.
    pub id: CellId,
    /// How many repetitions were taken together.
    pub repetitions: u32,
    /// Each gated metric the cell measured, by [`Metric::name`]; a metric some repetition did
    /// not measure is left out.
    pub metrics: BTreeMap<String, Spread>,
    /// The repetitions' safety.
    pub safety: SafetyRecord,
    /// The repetitions as rates: verdicts and each class of finding as k of n with a 95 %
    /// Wilson interval, recovery after the faults as median and range ([`crate::stats::rates`]);
    /// absent in baselines and summaries written before rates were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<Rates>,
}

/// The safety of a cell's repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SafetyRecord {
    /// What the workload (or schedule) expects of the cell.
    pub expected: Expect,
    /// Each repetition's verdict, in repetition order (`unknown` for one never checked).
    pub verdicts: Vec<SafetyVerdict>,
    /// Repetitions with at least one violation.
    pub repetitions_with_violations: u32,
    /// The first violation found, to walk to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_violation: Option<ViolationAt>,
}

/// Where a violation is: the cell folder of the repetition and its history lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationAt {
    /// The run folder the repetition is in, when the gate pooled several runs (`None`: the
    /// one run judged, or the run a baseline was saved from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The repetition's folder under `cells/`.
    pub cell_folder: String,
    /// The checker that found it.
    pub checker: String,
    /// What it found, in a sentence.
    pub what: String,
    /// The 1-based lines of the repetition's `history.jsonl`.
    pub lines: Vec<usize>,
}

impl SafetyRecord {
    /// `unsafe` if any repetition was, else `unknown` if any was, else `safe`.
    pub fn worst(&self) -> SafetyVerdict {
        SafetyVerdict::merge(self.verdicts.iter().copied())
    }

    /// E.g. `safe 3/3`, `unsafe 1/3`: the worst verdict and how many repetitions had it.
    pub fn describe(&self) -> String {
        let worst = self.worst();
        let n = self.verdicts.iter().filter(|v| **v == worst).count();
        format!("{} {n}/{}", worst.name(), self.verdicts.len())
    }
}

impl CellAggregate {
    /// Whether the cell ran under a fault schedule (its speed is not gated: a fault's timing
    /// moves it more than any code change).
    pub fn under_faults(&self) -> bool {
        self.id.chaos != crate::plan::NO_CHAOS
    }

    /// The spread of `metric`, when every repetition measured it.
    pub fn metric(&self, metric: Metric) -> Option<&Spread> {
        self.metrics.get(metric.name())
    }
}

/// `summaries` grouped by cell (repetitions of one cell together, in repetition order), in
/// the order cells first appear.
pub fn aggregate(summaries: &[CellSummary]) -> Vec<CellAggregate> {
    let mut order: Vec<CellId> = Vec::new();
    let mut groups: BTreeMap<CellId, Vec<&CellSummary>> = BTreeMap::new();
    for s in summaries {
        let base = s.id.base();
        if !groups.contains_key(&base) {
            order.push(base.clone());
        }
        groups.entry(base).or_default().push(s);
    }
    order
        .into_iter()
        .map(|id| {
            // Stable: runs pooled into one baseline keep their order, repetitions within each.
            let mut reps = groups.remove(&id).unwrap_or_default();
            reps.sort_by_key(|s| s.id.repetition);
            of_repetitions(id, &reps)
        })
        .collect()
}

fn of_repetitions(id: CellId, reps: &[&CellSummary]) -> CellAggregate {
    let mut metrics = BTreeMap::new();
    for m in Metric::ALL {
        let values: Option<Vec<f64>> = reps.iter().map(|s| m.of(s)).collect();
        if let Some(spread) = values.and_then(Spread::of) {
            metrics.insert(m.name().to_string(), spread);
        }
    }
    let mut safety = SafetyRecord {
        expected: reps
            .iter()
            .find_map(|s| s.safety.as_ref().map(|x| x.expected))
            .unwrap_or_default(),
        verdicts: Vec::new(),
        repetitions_with_violations: 0,
        first_violation: None,
    };
    for s in reps {
        let Some(x) = &s.safety else {
            safety.verdicts.push(SafetyVerdict::Unknown);
            continue;
        };
        safety.verdicts.push(x.verdict);
        if let Some(v) = x.violations.first() {
            safety.repetitions_with_violations += 1;
            safety.first_violation.get_or_insert_with(|| ViolationAt {
                run: None,
                cell_folder: s.id.to_string(),
                checker: v.checker.clone(),
                what: v.what.clone(),
                lines: v.lines.clone(),
            });
        } else if x.verdict == SafetyVerdict::Unsafe {
            safety.repetitions_with_violations += 1;
        }
    }
    CellAggregate {
        cell: id.to_string(),
        repetitions: reps.len() as u32,
        id,
        metrics,
        safety,
        rates: Some(rates(reps)),
    }
}
