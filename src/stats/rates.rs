//! A cell's repetitions (`run --repeat N`, each on seeds of its own) taken as samples of how
//! often a fault bites: the verdicts as a rate with its 95 % Wilson score interval ("unsafe in
//! 7 of 10, 40–89 %"), the same for each class of finding the checkers count, and the
//! recovery after the faults as a median and range. Pure: summaries in, figures out; the gate
//! ([`crate::gate`]) compares the rates with a baseline's and the reports show them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::{CellSummary, Safety, SafetyVerdict};

/// The normal quantile of a two-sided 95 % interval.
const Z95: f64 = 1.959_963_984_540_054;

/// `k` of `n` repetitions, with the 95 % Wilson score interval of the share behind them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Repetitions that showed it.
    pub k: u32,
    /// Repetitions judged.
    pub n: u32,
    /// The interval's lower end, a share from 0 to 1.
    pub low: f64,
    /// Its upper end, a share from 0 to 1.
    pub high: f64,
}

impl Rate {
    /// `k` of `n` with its Wilson score interval: centre (p + z²/2n) / (1 + z²/n), half-width
    /// z·√(p(1−p)/n + z²/4n²) / (1 + z²/n), p = k/n. Unlike p ± z·√(p(1−p)/n) it stays
    /// inside 0–1 and is not empty at 0 of n or n of n, which are the common outcomes of a few
    /// seeds. With `n` = 0 nothing is known: 0–1.
    pub fn of(k: u32, n: u32) -> Rate {
        if n == 0 {
            return Rate {
                k,
                n,
                low: 0.0,
                high: 1.0,
            };
        }
        let (kf, nf) = (f64::from(k.min(n)), f64::from(n));
        let p = kf / nf;
        let z2 = Z95 * Z95;
        let denom = 1.0 + z2 / nf;
        let centre = (p + z2 / (2.0 * nf)) / denom;
        let half = Z95 * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
        Rate {
            k,
            n,
            // The ends are exact at 0 of n and n of n; the formula leaves rounding there.
            low: if k == 0 { 0.0 } else { centre - half },
            high: if k >= n { 1.0 } else { centre + half },
        }
    }

    /// E.g. `unsafe in 7 of 10 (95 % interval 40–89 %)` for `what` = `unsafe`.
    pub fn describe(&self, what: &str) -> String {
        format!(
            "{what} in {} of {} (95 % interval {})",
            self.k,
            self.n,
            self.interval()
        )
    }

    /// The interval in whole percent, `40–89 %`.
    pub fn interval(&self) -> String {
        format!("{:.0}–{:.0} %", 100.0 * self.low, 100.0 * self.high)
    }

    /// Whether this rate rose significantly above `base`: its whole interval lies above the
    /// baseline's (its lower end above the baseline's upper end). Intervals that overlap are
    /// no evidence of a change.
    pub fn rose_above(&self, base: &Rate) -> bool {
        self.low > base.high
    }
}

/// A class of finding over the repetitions: in how many it showed, and how many in all.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassRate {
    /// Repetitions with at least one, of those with a verdict.
    #[serde(flatten)]
    pub rate: Rate,
    /// Findings of the class over every repetition.
    pub total: u64,
}

/// The recovery after the faults (each window's `recovery_ms`: its end → the first grant),
/// over every fault window that started, in every repetition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRange {
    /// Fault windows that started.
    pub windows: u32,
    /// Those followed by a grant (the ones the figures below are over).
    pub recovered: u32,
    /// The median, ms (the mean of the two middle values of an even count); absent when no
    /// window recovered.
    pub median_ms: Option<f64>,
    /// The fastest, ms.
    pub min_ms: Option<f64>,
    /// The slowest, ms.
    pub max_ms: Option<f64>,
}

/// A cell's repetitions as rates (`summary.json`'s `repeated[].rates`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Repetitions judged safe.
    pub safe: u32,
    /// Repetitions judged unsafe.
    #[serde(rename = "unsafe")]
    pub unsafe_: u32,
    /// Repetitions the history could not settle, or with no verdict at all.
    pub unknown: u32,
    /// Unsafe repetitions of all of them.
    pub unsafe_rate: Rate,
    /// Per class of finding the checkers count (see [`CLASSES`]), over the repetitions with
    /// a verdict; a class of one kind of lock only where the cell has it.
    pub classes: BTreeMap<String, ClassRate>,
    /// The recovery after the faults; absent without a fault window that started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryRange>,
}

/// A count of a cell's [`Safety`], `None` where the cell's kind of lock has none.
type Count = fn(&Safety) -> Option<u64>;

/// The classes of finding rated, by name: the mutex checker's overlap classes, then the
/// findings of the other checkers and of the other kinds of lock. `stale_accesses_rejected` is
/// left out: it is fencing at work, not a violation.
pub const CLASSES: [(&str, Count); 10] = [
    ("granted_twice", |s| Some(s.overlaps.granted_twice)),
    ("told_and_went_on", |s| Some(s.overlaps.told_and_went_on)),
    ("expired_untold", |s| Some(s.overlaps.expired_untold)),
    ("possible_overlaps", |s| Some(s.overlaps.unknown)),
    ("lost_updates", |s| Some(s.lost_updates)),
    ("token_regressions", |s| Some(s.token_regressions)),
    ("stuck_locks", |s| Some(s.stuck_locks)),
    ("releases_by_non_holder", |s| s.releases_by_non_holder),
    ("over_permits", |s| s.over_permits),
    ("possible_over_permits", |s| s.possible_over_permits),
];

/// The rates of one cell's repetitions `reps` (any order).
pub fn rates(reps: &[&CellSummary]) -> Rates {
    let verdict = |s: &&CellSummary| {
        s.safety
            .as_ref()
            .map_or(SafetyVerdict::Unknown, |x| x.verdict)
    };
    let count = |v: SafetyVerdict| reps.iter().filter(|s| verdict(s) == v).count() as u32;
    let (safe, unsafe_, unknown) = (
        count(SafetyVerdict::Safe),
        count(SafetyVerdict::Unsafe),
        count(SafetyVerdict::Unknown),
    );
    let judged: Vec<&Safety> = reps.iter().filter_map(|s| s.safety.as_ref()).collect();
    let mut classes = BTreeMap::new();
    for (name, of) in CLASSES {
        let counts: Vec<u64> = judged.iter().filter_map(|s| of(s)).collect();
        if counts.is_empty() {
            continue;
        }
        let k = counts.iter().filter(|&&c| c > 0).count() as u32;
        let rate = Rate::of(k, counts.len() as u32);
        let total = counts.iter().sum();
        classes.insert(name.to_string(), ClassRate { rate, total });
    }
    Rates {
        safe,
        unsafe_,
        unknown,
        unsafe_rate: Rate::of(unsafe_, reps.len() as u32),
        classes,
        recovery: recovery(reps),
    }
}

fn recovery(reps: &[&CellSummary]) -> Option<RecoveryRange> {
    let started: Vec<_> = reps
        .iter()
        .flat_map(|s| &s.faults)
        .filter(|w| w.started)
        .collect();
    if started.is_empty() {
        return None;
    }
    let mut ms: Vec<f64> = started
        .iter()
        .filter_map(|w| w.recovery_ms)
        .filter(|v| v.is_finite())
        .collect();
    ms.sort_by(f64::total_cmp);
    let n = ms.len();
    let median = match n {
        0 => None,
        _ if n % 2 == 1 => Some(ms[n / 2]),
        _ => Some((ms[n / 2 - 1] + ms[n / 2]) / 2.0),
    };
    Some(RecoveryRange {
        windows: started.len() as u32,
        recovered: n as u32,
        median_ms: median,
        min_ms: ms.first().copied(),
        max_ms: ms.last().copied(),
    })
}

impl RecoveryRange {
    /// E.g. `median 1.42 s, range 0.90–2.10 s over 4 of 4 windows`; `none of 2 windows
    /// recovered` when no grant followed any.
    pub fn describe(&self) -> String {
        let (Some(median), Some(min), Some(max)) = (self.median_ms, self.min_ms, self.max_ms)
        else {
            return format!("none of {} windows recovered", self.windows);
        };
        format!(
            "median {:.2} s, range {:.2}–{:.2} s over {} of {} windows",
            median / 1000.0,
            min / 1000.0,
            max / 1000.0,
            self.recovered,
            self.windows
        )
    }
}
