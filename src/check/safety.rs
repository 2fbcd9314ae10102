//! The `safety` field of a cell's summary filled from the checkers' verdicts: merged into one,
//! with their typed counts ([`super::Counts`]) and the first violations.

use super::Violation;
use super::{Evidence, Expect, MAX_EVIDENCE, SafetyVerdict, Verdict};
use crate::results::Safety;

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

impl Safety {
    /// The safety of a cell whose checkers gave `verdicts` (merged: `validity`): each
    /// verdict's counts fill the fields its checker owns; a checker that did not run (or
    /// panicked) leaves its fields at zero (`first_acquisition_ms` absent).
    pub fn of(verdicts: &[Verdict], validity: SafetyVerdict, expected: Expect) -> Safety {
        let findings = |validity: SafetyVerdict| {
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
        let mut safety = Safety {
            verdict: validity,
            expected,
            violations: findings(SafetyVerdict::Unsafe),
            possible_violations: findings(SafetyVerdict::Unknown),
            ..Safety::default()
        };
        for v in verdicts {
            v.counts.add_to(&mut safety);
        }
        safety
    }
}
