//! `expect` in workload files: which verdict a system × strategy is expected to get. A bare
//! `expect = "unsafe"` covers every cell; a table names systems (`redis`) or system/strategy
//! pairs (`"redis/herd"`) with `default` for the rest. The most specific entry wins.

use serde::{Deserialize, Serialize};

use crate::recipe::Strategy;
use crate::system::System;

/// What a cell's verdict is expected to be: a known-unsafe design that shows its violations is
/// a finding, not a failure (`expect` in workload files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// The lock should hold: an unsafe verdict fails the run.
    #[default]
    Safe,
    /// The design is known to break: an unsafe verdict is the expected finding.
    Unsafe,
}

impl Expect {
    /// The name used in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Expect::Safe => "safe",
            Expect::Unsafe => "unsafe",
        }
    }
}

/// The expected verdicts of one workload's cells.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expectations {
    /// For cells no entry names.
    pub default: Expect,
    /// Entries by system, and optionally strategy, in file order.
    pub entries: Vec<(System, Option<Strategy>, Expect)>,
}

impl Expectations {
    /// Every cell expected `e`.
    pub fn all(e: Expect) -> Expectations {
        Expectations {
            default: e,
            entries: Vec::new(),
        }
    }

    /// The expected verdict of `system` × `strategy`: its system/strategy entry, else its
    /// system's, else the default.
    pub fn of(&self, system: System, strategy: Strategy) -> Expect {
        let exact = self
            .entries
            .iter()
            .find(|(s, st, _)| *s == system && *st == Some(strategy));
        let by_system = || {
            self.entries
                .iter()
                .find(|(s, st, _)| *s == system && st.is_none())
        };
        exact
            .or_else(by_system)
            .map_or(self.default, |&(_, _, e)| e)
    }

    /// The selector text of an entry (`redis` or `redis/herd`).
    pub fn selector(system: System, strategy: Option<Strategy>) -> String {
        match strategy {
            Some(st) => format!("{}/{}", system.name(), st.name()),
            None => system.name().to_string(),
        }
    }
}

/// Reads `"safe"` or `"unsafe"`.
pub(super) fn parse_expect(text: &str) -> Option<Expect> {
    match text.trim() {
        "safe" => Some(Expect::Safe),
        "unsafe" => Some(Expect::Unsafe),
        _ => None,
    }
}

/// Reads a selector: `system` or `system/strategy`.
pub(super) fn parse_selector(text: &str) -> Result<(System, Option<Strategy>), String> {
    let (sys, strat) = match text.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (text, None),
    };
    let system: System = sys.parse().map_err(|e| format!("{e}"))?;
    let strategy = strat.map(str::parse::<Strategy>).transpose()?;
    Ok((system, strategy))
}
