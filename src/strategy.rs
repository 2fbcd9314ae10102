//! The waiting strategies a lock recipe offers, as files, flags and result folders name them.
//! The vocabulary alone (no recipe logic, no imports): a system's facts list the strategies its
//! recipe offers, and the recipes in [`crate::recipe`] implement them side by side.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a waiter learns it may try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Every waiter is woken by every release (or change) and races again: up to N-1 wake-ups
    /// per release, of which one wins.
    Herd,
    /// Waiters queue in FIFO order and each watches only the one ahead of it: a release wakes
    /// exactly one waiter, which then holds the lock.
    Predecessor,
    /// The server's own blocking wait: etcd's `Lock`/`Unlock` RPC (the v3lock service),
    /// PostgreSQL's `pg_advisory_lock`, MariaDB's `GET_LOCK(name, timeout)`. The server queues
    /// the waiters, in whatever order it keeps them.
    Native,
    /// Redis and Memcached; unsafe, for calibration. The herd's acquire, but the release is a
    /// plain `DEL key` (Memcached's `md key`) with no owner check: a holder whose key expired
    /// deletes the next holder's key, and a third client is granted the lock while the second
    /// still holds it.
    #[serde(rename = "unsafe-del")]
    UnsafeDel,
    /// Redis only; unsafe, for calibration. `SETNX key value`, then `PEXPIRE key ttl` as a second
    /// command (herd waiting, owner-checked release): a client that dies between the two leaves a
    /// key with no TTL that nobody ever deletes (see `RecipeConfig::crash_between_steps_every`).
    #[serde(rename = "unsafe-setnx-expire")]
    UnsafeSetnxExpire,
    /// ZooKeeper only, read-write locks only; unsafe, for calibration. The predecessor queue,
    /// but a writer waits only for the writers ahead of it, not the readers: it is granted
    /// while readers ahead still hold.
    #[serde(rename = "unsafe-writer-skips-readers")]
    UnsafeWriterSkipsReaders,
    /// Redis only, semaphores only; unsafe, for calibration. The holder count is read with
    /// `GET` and written back plus one with `SET`, two commands with nothing between them
    /// atomic: clients that read the same count all take a permit.
    #[serde(rename = "unsafe-get-set")]
    UnsafeGetSet,
    /// MariaDB only, mutexes only; unsafe, for calibration. The herd's `GET_LOCK(name, 0)`, but
    /// every client in a process shares one connection, as a connection pool hands one session
    /// to whichever request comes: `GET_LOCK` belongs to the session, not the client, and a
    /// session may take a lock it holds again, so a second client is granted while the first
    /// holds it.
    #[serde(rename = "unsafe-shared-session")]
    UnsafeSharedSession,
}

/// The two strategies every system offers, and the only ones a workload runs by default.
pub const BOTH_STRATEGIES: [Strategy; 2] = [Strategy::Herd, Strategy::Predecessor];

/// Every strategy, in the order help texts list them.
pub const ALL_STRATEGIES: [Strategy; 8] = [
    Strategy::Herd,
    Strategy::Predecessor,
    Strategy::Native,
    Strategy::UnsafeDel,
    Strategy::UnsafeSetnxExpire,
    Strategy::UnsafeWriterSkipsReaders,
    Strategy::UnsafeGetSet,
    Strategy::UnsafeSharedSession,
];

/// How help texts and error messages label the unsafe strategies.
pub const UNSAFE_LABEL: &str = "unsafe, for calibration";

impl Strategy {
    /// The name used in files, flags and result folders.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Herd => "herd",
            Strategy::Predecessor => "predecessor",
            Strategy::Native => "native",
            Strategy::UnsafeDel => "unsafe-del",
            Strategy::UnsafeSetnxExpire => "unsafe-setnx-expire",
            Strategy::UnsafeWriterSkipsReaders => "unsafe-writer-skips-readers",
            Strategy::UnsafeGetSet => "unsafe-get-set",
            Strategy::UnsafeSharedSession => "unsafe-shared-session",
        }
    }

    /// The lock kinds (their names in workload files) the strategy serves, `None` for every
    /// kind: etcd's server-side `Lock` and the mutex calibrations are mutexes (a reentrant
    /// lock counts over one), each other calibration breaks one kind.
    pub fn for_kinds(self) -> Option<&'static [&'static str]> {
        const EXCLUSIVE: &[&str] = &["mutex", "reentrant"];
        match self {
            Strategy::Herd | Strategy::Predecessor => None,
            Strategy::Native | Strategy::UnsafeDel | Strategy::UnsafeSetnxExpire => Some(EXCLUSIVE),
            Strategy::UnsafeWriterSkipsReaders => Some(&["rwlock"]),
            Strategy::UnsafeGetSet => Some(&["semaphore"]),
            Strategy::UnsafeSharedSession => Some(&["mutex"]),
        }
    }

    /// True for the known-broken designs (`unsafe-*`): offered to calibrate the checkers, never
    /// part of the default comparison.
    pub fn is_unsafe(self) -> bool {
        matches!(
            self,
            Strategy::UnsafeDel
                | Strategy::UnsafeSetnxExpire
                | Strategy::UnsafeWriterSkipsReaders
                | Strategy::UnsafeGetSet
                | Strategy::UnsafeSharedSession
        )
    }

    /// The name as help texts list it: unsafe ones carry [`UNSAFE_LABEL`].
    pub fn labelled(self) -> String {
        if self.is_unsafe() {
            format!("{} ({UNSAFE_LABEL})", self.name())
        } else {
            self.name().to_string()
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        ALL_STRATEGIES
            .into_iter()
            .find(|st| st.name() == wanted)
            .ok_or_else(|| {
                format!(
                    "unknown strategy '{s}': valid strategies are herd, predecessor, native (etcd, \
                     postgres, mariadb), unsafe-del (redis and memcached; {UNSAFE_LABEL}), \
                     unsafe-setnx-expire and unsafe-get-set (redis only; {UNSAFE_LABEL}), \
                     unsafe-writer-skips-readers (zookeeper only; {UNSAFE_LABEL}) and \
                     unsafe-shared-session (mariadb only; {UNSAFE_LABEL})"
                )
            })
    }
}
