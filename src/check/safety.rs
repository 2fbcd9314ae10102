//! The `safety` field of a cell's summary: the checkers' verdicts merged into one, with their
//! counts and the first violations, typed (no text to parse).

use serde::{Deserialize, Serialize};

use super::{Evidence, Expect, MAX_EVIDENCE, Validity, Verdict};
use super::{availability, fencing, lost_update, mutex};

/// A cell's verdict on "is it still a lock".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyVerdict {
    /// Every checker found its property held.
    Safe,
    /// Some checker found a violation.
    Unsafe,
    /// No violation, but an unknown outcome could hide one.
    Unknown,
}

impl From<Validity> for SafetyVerdict {
    fn from(v: Validity) -> SafetyVerdict {
        match v {
            Validity::Valid => SafetyVerdict::Safe,
            Validity::Invalid => SafetyVerdict::Unsafe,
            Validity::Unknown => SafetyVerdict::Unknown,
        }
    }
}

impl SafetyVerdict {
    /// The name used in summaries and reports.
    pub fn name(self) -> &'static str {
        match self {
            SafetyVerdict::Safe => "safe",
            SafetyVerdict::Unsafe => "unsafe",
            SafetyVerdict::Unknown => "unknown",
        }
    }
}

/// Overlapping holds of one key by different clients, by class (see [`mutex`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlaps {
    /// Both inside their leases, nobody told: the service granted the lock twice.
    pub granted_twice: u64,
    /// The earlier holder had been told its lease was lost and went on.
    pub told_and_went_on: u64,
    /// The earlier holder's lease had expired without it being told (yet).
    pub expired_untold: u64,
    /// Possible overlaps that need an `info` acquisition to have been granted.
    pub unknown: u64,
}

/// One finding of a checker, typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The checker that found it.
    pub checker: String,
    /// The kind of finding (`granted_twice`, `lost_update`, `token_regressions`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// In a sentence naming clients, key, tokens and times.
    pub what: String,
    /// The lock key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The clients involved, the earlier first.
    #[serde(default)]
    pub clients: Vec<u32>,
    /// Their fencing tokens, where known.
    #[serde(default)]
    pub tokens: Vec<u64>,
    /// The times it rests on, µs, earliest first.
    #[serde(default)]
    pub t_us: Vec<u64>,
    /// The 1-based lines of `history.jsonl` to read.
    #[serde(default)]
    pub lines: Vec<usize>,
}

impl Violation {
    fn of(checker: &str, e: &Evidence) -> Violation {
        Violation {
            checker: checker.to_string(),
            class: e.class.clone(),
            what: e.what.clone(),
            key: e.key.clone(),
            clients: e.clients.clone(),
            tokens: e.tokens.clone(),
            t_us: e.t_us.clone(),
            lines: e.lines.clone(),
        }
    }
}

/// The cell's safety: the merged verdict, what it was expected to be, the counts behind it and
/// the first findings (`safety` in `summary.json`; see `docs/results-schema.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Safety {
    /// The checkers' verdicts merged: any invalid → `unsafe`, else any unknown → `unknown`,
    /// else `safe`.
    pub verdict: SafetyVerdict,
    /// What the workload expects of this cell's system and strategy.
    pub expected: Expect,
    /// Overlapping holds by class.
    pub overlaps: Overlaps,
    /// Accepted writes whose increment the register does not show.
    pub lost_updates: u64,
    /// Accesses the fenced register refused for a stale token (fencing at work, not a
    /// violation).
    pub stale_accesses_rejected: u64,
    /// Grants whose token did not exceed the previous grant's on the key.
    pub token_regressions: u64,
    /// Stretches in which a lock outlived every lease (see [`availability`]).
    pub stuck_locks: u64,
    /// The longest stretch with a client waiting and nothing granted on its key, ms.
    pub max_unavailable_ms: f64,
    /// The first acquire invoke → the first grant, ms; `None` when nothing was granted.
    pub first_acquisition_ms: Option<f64>,
    /// The first [`MAX_EVIDENCE`] violations across checkers, in time order.
    pub violations: Vec<Violation>,
    /// The first [`MAX_EVIDENCE`] possible violations (they need an unknown outcome), in time
    /// order.
    pub possible_violations: Vec<Violation>,
}

impl Safety {
    /// The safety of a cell whose checkers gave `verdicts` (merged: `validity`).
    pub fn of(verdicts: &[Verdict], validity: Validity, expected: Expect) -> Safety {
        let count = |checker: &str, name: &str| -> Option<u64> {
            verdicts
                .iter()
                .find(|v| v.checker == checker)
                .and_then(|v| v.counts.get(name).copied())
        };
        let n = |checker, name| count(checker, name).unwrap_or(0);
        let ms = |us: u64| us as f64 / 1000.0;
        let findings = |validity: Validity| {
            let mut all: Vec<Violation> = verdicts
                .iter()
                .flat_map(|v| {
                    v.evidence
                        .iter()
                        .filter(move |e| e.validity == validity)
                        .map(move |e| Violation::of(&v.checker, e))
                })
                .collect();
            all.sort_by_key(|v| v.t_us.first().copied().unwrap_or(0));
            all.truncate(MAX_EVIDENCE);
            all
        };
        Safety {
            verdict: validity.into(),
            expected,
            overlaps: Overlaps {
                granted_twice: n(mutex::NAME, mutex::GRANTED_TWICE),
                told_and_went_on: n(mutex::NAME, mutex::TOLD_AND_WENT_ON),
                expired_untold: n(mutex::NAME, mutex::EXPIRED_UNTOLD),
                unknown: n(mutex::NAME, mutex::UNKNOWN),
            },
            lost_updates: n(lost_update::NAME, lost_update::LOST_UPDATES),
            stale_accesses_rejected: n(fencing::NAME, fencing::STALE_ACCESSES_REJECTED),
            token_regressions: n(fencing::NAME, fencing::TOKEN_REGRESSIONS),
            stuck_locks: n(availability::NAME, availability::STUCK_LOCKS),
            max_unavailable_ms: ms(n(availability::NAME, availability::MAX_UNAVAILABLE_US)),
            first_acquisition_ms: count(availability::NAME, availability::FIRST_ACQUISITION_US)
                .map(ms),
            violations: findings(Validity::Invalid),
            possible_violations: findings(Validity::Unknown),
        }
    }
}
