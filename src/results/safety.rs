//! The `safety` field of a cell's summary: the checkers' verdicts merged into one, with their
//! counts and the first violations, typed (no text to parse). The checkers fill it
//! ([`crate::check::safety`]).

use serde::{Deserialize, Serialize};

use super::Expect;

/// A cell's verdict on "is it still a lock".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyVerdict {
    /// Every checker found its property held.
    Safe,
    /// Some checker found a violation.
    Unsafe,
    /// No violation, but an unknown outcome could hide one (and, as no checker's verdict
    /// settles nothing, the default).
    #[default]
    Unknown,
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

/// Overlapping holds of one key by different clients, by class (see [`crate::check::mutex`]).
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

/// The cell's safety: the merged verdict, what it was expected to be, the counts behind it and
/// the first findings (`safety` in `summary.json`; see `docs/results-schema.md`). Each count is
/// filled by the checker that owns it (its `Counts`); the default has none and an unknown verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// Stretches in which a lock outlived every lease (see [`crate::check::availability`]).
    pub stuck_locks: u64,
    /// The longest stretch with a client waiting and nothing granted on its key, ms.
    pub max_unavailable_ms: f64,
    /// The first acquire invoke → the first grant, ms; `None` when nothing was granted.
    pub first_acquisition_ms: Option<f64>,
    /// The first [`crate::check::MAX_EVIDENCE`] violations across checkers, in time order.
    pub violations: Vec<Violation>,
    /// The first [`crate::check::MAX_EVIDENCE`] possible violations (they need an unknown outcome), in time
    /// order.
    pub possible_violations: Vec<Violation>,
}

impl Safety {
    /// The counts a reader is told about, in words, in the order `lockbench run` lists them (the
    /// one place a count is named for the terminal and the reports).
    pub fn described_counts(&self) -> [(&'static str, u64); 8] {
        let o = &self.overlaps;
        [
            ("overlaps granted twice", o.granted_twice),
            ("overlaps after the holder was told", o.told_and_went_on),
            ("overlaps after an untold expiry", o.expired_untold),
            ("possible overlaps (unknown outcomes)", o.unknown),
            ("lost updates", self.lost_updates),
            ("token regressions", self.token_regressions),
            ("stuck locks", self.stuck_locks),
            ("stale accesses rejected", self.stale_accesses_rejected),
        ]
    }
}
