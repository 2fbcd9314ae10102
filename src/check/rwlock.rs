//! Read-write exclusion: per key, readers may hold together; a writer's hold must not overlap
//! any other client's hold, reader or writer.
//!
//! A hold reads when its acquisition's `mode` is `read` (the grant's for a certain hold, the
//! invoke's for a possible one); any other hold (`write`, or no `mode`: exclusive) writes. Holds
//! are the [`super::mutex`] checker's (a certain hold from the acquire `ok` to the same client's
//! release `invoke`; an `info` acquisition a possible hold from its invoke to its outcome), and
//! every overlap of two clients' holds in which at least one writes is judged and classified as
//! that checker judges overlaps (`granted_twice`, `told_and_went_on`, `expired_untold`;
//! `unknown` when it needs an `info` acquisition to have been granted). Overlaps of two readers
//! are what the lock is for: counted ([`SHARED`]), never a finding.

use super::mutex::{Holds, MutexCounts};
use super::{Checker, Counts, History, Safety, Verdict};
use crate::results::CellInfo;

/// The checker's name, its verdict's `checker`.
pub const NAME: &str = "rwlock";
/// Count: overlaps of two readers' holds (allowed), in the verdict only.
pub const SHARED: &str = "shared_overlaps";

/// The read-write exclusion checker.
pub struct RwLock;

/// The rwlock checker's counts: overlaps involving a writer by class (the cell's
/// `safety.overlaps`, as a mutex's), and the readers' shared overlaps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RwLockCounts {
    /// Overlaps of two clients' holds with a writer among them, by class.
    pub overlaps: MutexCounts,
    /// [`SHARED`].
    pub shared_overlaps: u64,
}

impl Counts for RwLockCounts {
    fn add_to(&self, safety: &mut Safety) {
        self.overlaps.add_to(safety);
    }

    fn named(&self) -> Vec<(&'static str, u64)> {
        let mut out = self.overlaps.named();
        out.push((SHARED, self.shared_overlaps));
        out
    }
}

impl Checker for RwLock {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&self, history: &History, cell: &CellInfo) -> Verdict {
        let holds = Holds::of(history, cell, |_| true, |_, _, _| true);
        let (overlaps, log, shared_overlaps) = holds.overlaps(|a, b| !(a.reads() && b.reads()));
        let counts = RwLockCounts {
            overlaps,
            shared_overlaps,
        };
        let mut verdict = overlaps.verdict(self.name(), &holds, log, counts);
        verdict.summary = format!(
            "{} (each with a writer); {shared_overlaps} overlaps of readers only (allowed)",
            verdict.summary
        );
        verdict
    }
}

#[cfg(test)]
mod tests;
