//! The schedule file's shapes as serde reads them: every field optional and loosely typed, so
//! range, unit and per-kind errors come from validation with the field's path
//! (`faults[2].target`).

use serde::Deserialize;

use crate::spec::raw::{FromBare, StrOrTable};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSchedule {
    pub(super) name: Option<String>,
    pub(super) seed: Option<i64>,
    pub(super) systems: Option<Vec<String>>,
    pub(super) cluster_size: Option<i64>,
    pub(super) expect: Option<toml::Value>,
    pub(super) faults: Option<Vec<RawFault>>,
}

/// One `[[faults]]` table, and also one entry of a mixed fault's `kinds` (which takes no
/// timing and no `kinds`: validation says so with the entry's path).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) kind: Option<String>,
    // Parameters; which apply depends on the kind.
    pub(super) target: Option<String>,
    pub(super) data: Option<String>,
    pub(super) restart_after: Option<String>,
    pub(super) shape: Option<String>,
    pub(super) clients: Option<bool>,
    pub(super) mode: Option<String>,
    pub(super) by: Option<String>,
    pub(super) rate: Option<f64>,
    pub(super) kinds: Option<Vec<StrOrTable<RawFault>>>,
    // Timing.
    pub(super) start: Option<String>,
    pub(super) every: Option<String>,
    pub(super) jitter: Option<String>,
    pub(super) duration: Option<String>,
}

impl FromBare for RawFault {
    fn from_bare(kind: String) -> Self {
        RawFault {
            kind: Some(kind),
            ..RawFault::default()
        }
    }
}

impl RawFault {
    /// The parameters given, by name, so a parameter that does not apply to a kind is named.
    pub(super) fn given_parameters(&self) -> Vec<&'static str> {
        [
            ("target", self.target.is_some()),
            ("data", self.data.is_some()),
            ("restart_after", self.restart_after.is_some()),
            ("shape", self.shape.is_some()),
            ("clients", self.clients.is_some()),
            ("mode", self.mode.is_some()),
            ("by", self.by.is_some()),
            ("rate", self.rate.is_some()),
            ("kinds", self.kinds.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, given)| given.then_some(n))
        .collect()
    }

    /// The timing fields given, by name.
    pub(super) fn given_timing(&self) -> Vec<&'static str> {
        [
            ("start", self.start.is_some()),
            ("every", self.every.is_some()),
            ("jitter", self.jitter.is_some()),
            ("duration", self.duration.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, given)| given.then_some(n))
        .collect()
    }
}
