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
    /// A chaos cell in which no fault took effect (each failed to start, or none was reached):
    /// its verdict, unless it broke, says nothing about the schedule.
    Untested,
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
    /// For a chaos cell in which no fault took effect, what its fault windows say; `None` for
    /// a calm cell or one with a fault that started.
    pub untested: Option<String>,
}

impl CellVerdict {
    /// How the cell's verdict compares with its expectation ([`judge_cell`]).
    pub fn judged(&self) -> Judged {
        judge_cell(self.verdict, self.expected, self.untested.is_some())
    }
}

/// [`judge`], except that a chaos cell in which no fault took effect (`untested`) is
/// [`Judged::Untested`] unless the lock broke anyway: the one rule the exit code and the
/// reports' verdict words both follow.
pub fn judge_cell(verdict: SafetyVerdict, expected: Expect, untested: bool) -> Judged {
    match judge(verdict, expected) {
        Judged::Broke => Judged::Broke,
        _ if untested => Judged::Untested,
        j => j,
    }
}

/// What the fault windows of a chaos cell say when none of them took effect; `None` for a calm
/// cell or when one started.
pub fn untested(c: &CellSummary) -> Option<String> {
    if c.id.chaos == crate::plan::NO_CHAOS || c.faults.iter().any(|w| w.started) {
        return None;
    }
    let errors: Vec<&str> = c.faults.iter().filter_map(|w| w.error.as_deref()).collect();
    Some(match c.faults.len() {
        0 => format!(
            "schedule {} injected no fault: none was reached",
            c.id.chaos
        ),
        n => format!(
            "schedule {} injected no fault: its {n} window(s) did not start ({})",
            c.id.chaos,
            errors.join("; ")
        ),
    })
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
                    untested: untested(c),
                })
            })
            .collect();
        Judgement { cells }
    }

    /// The cells judged `j`.
    pub fn judged(&self, j: Judged) -> impl Iterator<Item = &CellVerdict> {
        self.cells.iter().filter(move |c| c.judged() == j)
    }

    /// True when the run must exit 1: a cell expected safe was judged unsafe, or, with
    /// `strict`, a verdict was unknown, an expected-unsafe design was not exposed or a chaos
    /// cell injected no fault.
    pub fn fails(&self, strict: bool) -> bool {
        self.judged(Judged::Broke).next().is_some()
            || (strict
                && [Judged::Unknown, Judged::NotExposed, Judged::Untested]
                    .into_iter()
                    .any(|j| self.judged(j).next().is_some()))
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
        for c in self.judged(Judged::Untested) {
            out.push(format!(
                "untested {} ({} verdict; {}): {}",
                c.cell,
                c.verdict,
                if strict {
                    "fails under --strict"
                } else {
                    "says nothing about faults; --strict fails it"
                },
                c.untested.as_deref().unwrap_or_default()
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
            untested: None,
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

        // A chaos cell whose faults never took effect is untested, safe or a finding alike;
        // one that broke anyway still broke.
        let quiet = |verdict, expected| CellVerdict {
            untested: Some("schedule s injected no fault: none was reached".into()),
            ..cell("q", verdict, expected)
        };
        for c in [quiet(Safe, Expect::Safe), quiet(Unsafe, Expect::Unsafe)] {
            let u = j(vec![c]);
            assert!(!u.fails(false) && u.fails(true));
            assert_eq!(
                u.lines(false),
                [format!(
                    "untested q ({} verdict; says nothing about faults; --strict fails it): \
                     schedule s injected no fault: none was reached",
                    u.cells[0].verdict
                )]
            );
        }
        assert_eq!(quiet(Unsafe, Expect::Safe).judged(), Judged::Broke);
    }
}
