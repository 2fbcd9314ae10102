//! Redlock's two restart variants as kill faults with a down time: what the nemesis starts, and
//! how long it waits before ending the fault (the restart).
//!
//! - `redlock-restart-empty` (Kleppmann's scenario): a master dies and comes back at once with
//!   no data (no persistence), so a lock it granted is forgotten while its TTL still runs and
//!   another client can gather a quorum for the same key.
//! - `redlock-restart-delayed` (the Redlock spec's remedy): the master stays down longer than
//!   the longest lock TTL, plus the spec's clock drift (1 % of the TTL + 2 ms), so every lock it
//!   knew has expired everywhere before it answers again.
//!
//! Both restart with the data wiped: without persistence that is what a restart does anyway,
//! and with persistence it forces the scenario the variant names.

use std::fmt;
use std::time::Duration;

use super::Fault;
use crate::cluster::DataOnRestart;

/// A Redlock restart variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedlockRestart {
    /// Restart at once, empty.
    Empty,
    /// Restart empty once the longest TTL (and the spec's drift) has passed.
    Delayed,
}

impl RedlockRestart {
    /// The name of the shipped schedule.
    pub fn name(self) -> &'static str {
        match self {
            RedlockRestart::Empty => "redlock-restart-empty",
            RedlockRestart::Delayed => "redlock-restart-delayed",
        }
    }

    /// The kill fault on `nodes`, and how long they stay down before the restart, for locks
    /// whose TTL is at most `ttl`.
    pub fn plan(self, nodes: Vec<String>, ttl: Duration) -> (Fault, Duration) {
        let fault = Fault::Kill {
            nodes,
            data: DataOnRestart::Wipe,
        };
        let down = match self {
            RedlockRestart::Empty => Duration::ZERO,
            RedlockRestart::Delayed => ttl + ttl / 100 + Duration::from_millis(2),
        };
        (fault, down)
    }
}

impl fmt::Display for RedlockRestart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delayed_waits_past_the_ttl_and_the_drift() {
        let (f, down) =
            RedlockRestart::Delayed.plan(vec!["redlock2".into()], Duration::from_secs(10));
        // 10 s + 1 % (100 ms) + 2 ms.
        assert_eq!(down, Duration::from_millis(10_102));
        assert_eq!(
            f,
            Fault::Kill {
                nodes: vec!["redlock2".into()],
                data: DataOnRestart::Wipe
            }
        );
        let (_, now) = RedlockRestart::Empty.plan(vec!["redlock1".into()], Duration::from_secs(10));
        assert_eq!(now, Duration::ZERO);
        assert_eq!(RedlockRestart::Empty.to_string(), "redlock-restart-empty");
    }
}
