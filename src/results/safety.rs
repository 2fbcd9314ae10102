//! The `safety` field of a cell's summary: the checkers' verdicts merged into one, with their
//! counts and the first violations, typed (no text to parse). The checkers fill it
//! ([`crate::check::safety`]).

use serde::{Deserialize, Serialize};

use super::Expect;

/// Whether a property held, three-valued (Jepsen's `:valid?` with its `:unknown`): one
/// checker's verdict on its property, a fault window's, and a cell's on "is it still a lock"
/// (its checkers' verdicts merged). One type and one vocabulary everywhere: `safe`, `unsafe`,
/// `unknown` (histories and summaries of schema 5 and earlier wrote `valid` and `invalid` for a
/// fault window's verdict, read as `safe` and `unsafe`). Ordered safe < unknown < unsafe, so
/// that merging is taking the largest.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SafetyVerdict {
    /// The history shows the property held.
    #[serde(alias = "valid")]
    Safe,
    /// The history cannot settle it: an unknown outcome could hide a violation, or there was
    /// nothing to judge (and, as no verdict settles nothing, the default).
    #[default]
    Unknown,
    /// The history shows a violation.
    #[serde(alias = "invalid")]
    Unsafe,
}

impl SafetyVerdict {
    /// Several verdicts as one: any unsafe makes it unsafe, else any unknown makes it
    /// unknown, else safe (Jepsen's `merge-valid`). No verdict at all is unknown.
    pub fn merge(all: impl IntoIterator<Item = SafetyVerdict>) -> SafetyVerdict {
        all.into_iter().max().unwrap_or(SafetyVerdict::Unknown)
    }

    /// The name used in summaries and reports.
    pub fn name(self) -> &'static str {
        match self {
            SafetyVerdict::Safe => "safe",
            SafetyVerdict::Unsafe => "unsafe",
            SafetyVerdict::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for SafetyVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
/// the first findings (`safety` in `summary.json`; see `docs/book/src/results-schema.md`). Each count is
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
    /// Reentrant cells: releases by a client that held nothing on the key (see
    /// [`crate::check::reentrant`]); absent in cells of other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases_by_non_holder: Option<u64>,
    /// Semaphore cells: grants that made more certain holders of a key than its permits (see
    /// [`crate::check::semaphore`]); absent in cells of other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_permits: Option<u64>,
    /// Semaphore cells: more holders than permits only if unknown acquisitions were granted;
    /// absent in cells of other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub possible_over_permits: Option<u64>,
    /// The first [`crate::check::MAX_EVIDENCE`] violations across checkers, in time order.
    pub violations: Vec<Violation>,
    /// The first [`crate::check::MAX_EVIDENCE`] possible violations (they need an unknown outcome), in time
    /// order.
    pub possible_violations: Vec<Violation>,
}

impl Safety {
    /// The counts a reader is told about, in words, in the order `lockbench run` lists them (the
    /// one place a count is named for the terminal and the reports); the counts of one kind of
    /// lock only where the cell has them.
    pub fn described_counts(&self) -> Vec<(&'static str, u64)> {
        let o = &self.overlaps;
        let kinds = [
            ("releases by a non-holder", self.releases_by_non_holder),
            ("grants beyond the permits", self.over_permits),
            (
                "possible grants beyond the permits (unknown outcomes)",
                self.possible_over_permits,
            ),
        ];
        let mut out = vec![
            ("overlaps granted twice", o.granted_twice),
            ("overlaps after the holder was told", o.told_and_went_on),
            ("overlaps after an untold expiry", o.expired_untold),
            ("possible overlaps (unknown outcomes)", o.unknown),
            ("lost updates", self.lost_updates),
            ("token regressions", self.token_regressions),
            ("stuck locks", self.stuck_locks),
            ("stale accesses rejected", self.stale_accesses_rejected),
        ];
        out.extend(kinds.into_iter().filter_map(|(what, n)| Some((what, n?))));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::SafetyVerdict;

    #[test]
    fn one_vocabulary_is_written_and_the_old_window_words_are_read() {
        for (v, word) in [
            (SafetyVerdict::Safe, "safe"),
            (SafetyVerdict::Unknown, "unknown"),
            (SafetyVerdict::Unsafe, "unsafe"),
        ] {
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{word}\""));
            assert_eq!(v.to_string(), word);
        }
        // Fault windows of schema 5 and earlier said valid / invalid.
        let old: Vec<SafetyVerdict> = serde_json::from_str(r#"["valid", "invalid"]"#).unwrap();
        assert_eq!(old, [SafetyVerdict::Safe, SafetyVerdict::Unsafe]);
    }
}
