//! Failed and unknown outcomes: timeouts apart, the rest grouped by error kind (and by text, for
//! reading), and how many were unknown (`info`).

use std::collections::BTreeMap;

use crate::history::{ErrorKind, Event, EventKind, TIMEOUT_ERROR};

/// Counts of the measured outcomes that were not `ok`.
#[derive(Debug, Default)]
pub(crate) struct Outcomes {
    pub timeouts: u64,
    pub errors: BTreeMap<String, u64>,
    pub error_messages: BTreeMap<String, u64>,
    pub indeterminate: u64,
}

impl Outcomes {
    /// A `fail` or `info` outcome of an operation that started after the warm-up.
    pub fn failed(&mut self, e: &Event) {
        self.indeterminate += u64::from(e.kind == EventKind::Info);
        // Histories written before error kinds name timeouts by their text.
        let kind = e
            .error_kind
            .or_else(|| (e.error.as_deref() == Some(TIMEOUT_ERROR)).then_some(ErrorKind::Timeout));
        if kind == Some(ErrorKind::Timeout) {
            self.timeouts += 1;
        } else {
            let k = kind.map_or("unclassified", ErrorKind::name);
            *self.errors.entry(k.to_string()).or_default() += 1;
            let text = e.error.as_deref().unwrap_or("(no message)");
            *self.error_messages.entry(text.to_string()).or_default() += 1;
        }
    }
}
