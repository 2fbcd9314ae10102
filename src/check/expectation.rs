//! A cell's verdict against what its workload expects, and what that means for the exit code of
//! `lockbench run` and `lockbench check`: a cell expected safe and judged unsafe fails the run;
//! a known-unsafe design that shows its violations is a finding; `unknown` is reported, and fails
//! only under `--strict`.

use super::{Expect, Safety, SafetyVerdict};
use crate::results::CellSummary;

/// How one cell's verdict compares with its expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// Safe as expected, or unsafe as expected (a finding).
    AsExpected,
    /// Expected safe, judged unsafe: the lock broke.
    Broke,
    /// The history could not settle it.
    Unknown,
    /// Expected unsafe, judged safe: the run did not expose the design's flaw (too short, or a
    /// checker that misses it).
    NotExposed,
}

/// Compares `verdict` with `expected`.
pub fn judge(verdict: SafetyVerdict, expected: Expect) -> Judged {
    match (verdict, expected) {
        (SafetyVerdict::Unknown, _) => Judged::Unknown,
        (SafetyVerdict::Safe, Expect::Safe) | (SafetyVerdict::Unsafe, Expect::Unsafe) => {
            Judged::AsExpected
        }
        (SafetyVerdict::Unsafe, Expect::Safe) => Judged::Broke,
        (SafetyVerdict::Safe, Expect::Unsafe) => Judged::NotExposed,
    }
}

/// One cell as the exit code sees it.
#[derive(Debug, Clone)]
pub struct CellVerdict {
    /// The cell's id (its folder name).
    pub cell: String,
    /// Its merged verdict.
    pub verdict: SafetyVerdict,
    /// What its workload expects.
    pub expected: Expect,
    /// Why, in a line: counts and the first violation with its history lines.
    pub why: String,
}

/// Every cell's verdict against its expectation.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    /// The cells, in run order.
    pub cells: Vec<CellVerdict>,
}

impl Judgement {
    /// The judgement of cells whose summaries carry their `safety` (cells without one, from
    /// before the checkers existed, are left out).
    pub fn of_summaries(cells: &[CellSummary]) -> Judgement {
        let cells = cells
            .iter()
            .filter_map(|c| {
                let s = c.safety.as_ref()?;
                Some(CellVerdict {
                    cell: c.id.to_string(),
                    verdict: match s.verdict {
                        SafetyVerdict::Safe => SafetyVerdict::Safe,
                        SafetyVerdict::Unsafe => SafetyVerdict::Unsafe,
                        SafetyVerdict::Unknown => SafetyVerdict::Unknown,
                    },
                    expected: s.expected,
                    why: why(s),
                })
            })
            .collect();
        Judgement { cells }
    }

    /// The cells judged `j`.
    pub fn judged(&self, j: Judged) -> impl Iterator<Item = &CellVerdict> {
        self.cells
            .iter()
            .filter(move |c| judge(c.verdict, c.expected) == j)
    }

    /// True when the run must exit 1: a cell expected safe was judged unsafe, or, with
    /// `strict`, a verdict was unknown or an expected-unsafe design was not exposed.
    pub fn fails(&self, strict: bool) -> bool {
        self.judged(Judged::Broke).next().is_some()
            || (strict
                && (self.judged(Judged::Unknown).next().is_some()
                    || self.judged(Judged::NotExposed).next().is_some()))
    }

    /// What to tell the user, one line per cell that is not plainly as expected, then the
    /// findings (expected-unsafe cells that showed their violations).
    pub fn lines(&self, strict: bool) -> Vec<String> {
        let mut out = Vec::new();
        for c in self.judged(Judged::Broke) {
            out.push(format!("UNSAFE {} (expected safe): {}", c.cell, c.why));
        }
        let unknown_tail = if strict {
            " (fails under --strict)"
        } else {
            " (reported, not failed; --strict fails it)"
        };
        for c in self.judged(Judged::Unknown) {
            out.push(format!("unknown {}{unknown_tail}: {}", c.cell, c.why));
        }
        for c in self.judged(Judged::NotExposed) {
            out.push(format!(
                "not exposed {} (expected unsafe, judged safe{}): {}",
                c.cell,
                if strict { "; fails under --strict" } else { "" },
                c.why
            ));
        }
        for c in self.judged(Judged::AsExpected) {
            if c.verdict == SafetyVerdict::Unsafe {
                out.push(format!(
                    "finding {} (unsafe, as expected): {}",
                    c.cell, c.why
                ));
            }
        }
        out
    }
}

/// The counts that are not zero, then the first violation (or possible one) with the history
/// lines to read.
pub fn why(s: &Safety) -> String {
    let counts = s.described_counts();
    let mut parts: Vec<String> = counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{n} {what}"))
        .collect();
    if parts.is_empty() {
        parts.push("no violation".into());
    }
    let first = s.violations.first().or(s.possible_violations.first());
    let mut out = parts.join(", ");
    if let Some(v) = first {
        let lines: Vec<String> = v.lines.iter().map(usize::to_string).collect();
        out.push_str(&format!("; first: {}", v.what));
        // A finding about no event (a checker that panicked) has no lines to point at.
        if !lines.is_empty() {
            out.push_str(&format!(" (history.jsonl lines {})", lines.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(name: &str, verdict: SafetyVerdict, expected: Expect) -> CellVerdict {
        CellVerdict {
            cell: name.into(),
            verdict,
            expected,
            why: "w".into(),
        }
    }

    #[test]
    fn only_an_unexpected_unsafe_fails_unless_strict() {
        use SafetyVerdict::*;
        let j = |cells: Vec<CellVerdict>| Judgement { cells };
        let safe = j(vec![
            cell("a", Safe, Expect::Safe),
            cell("b", Unsafe, Expect::Unsafe),
        ]);
        assert!(!safe.fails(false) && !safe.fails(true));
        assert_eq!(safe.lines(false), ["finding b (unsafe, as expected): w"]);

        let broke = j(vec![
            cell("a", Unsafe, Expect::Safe),
            cell("b", Safe, Expect::Safe),
        ]);
        assert!(broke.fails(false));
        assert_eq!(broke.lines(false), ["UNSAFE a (expected safe): w"]);

        let unknown = j(vec![cell("u", Unknown, Expect::Safe)]);
        assert!(!unknown.fails(false) && unknown.fails(true));
        assert!(unknown.lines(false)[0].starts_with("unknown u (reported, not failed"));

        let missed = j(vec![cell("m", Safe, Expect::Unsafe)]);
        assert!(!missed.fails(false) && missed.fails(true));
        assert!(missed.lines(false)[0].starts_with("not exposed m"));
    }
}
