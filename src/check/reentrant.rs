//! Reentrant mutual exclusion: per key, a client that holds the lock may take it again and
//! releases it as often; the holds of different clients must not overlap.
//!
//! A client's nested holds of one key are one hold: the outer one, from the acquire `ok` that
//! found the client holding nothing to the release `invoke` that gives the last hold back
//! (critical sections pair each release with the client's latest open hold, innermost first,
//! so the outer section is exactly that). Outer holds of different clients that overlap are
//! judged and classified as the [`super::mutex`] checker judges overlaps (`granted_twice`,
//! `told_and_went_on`, `expired_untold`; `unknown` with an `info` acquisition of a client that
//! held nothing when it asked, a re-entry adds nothing the outer hold does not cover).
//!
//! [`RELEASE_BY_NON_HOLDER`]: a release `invoke` by a client holding nothing on that key (it
//! released more often than it was granted): a violation, or `unknown` when an acquisition of
//! that client on that key ended `info` and no release has answered for it yet (it may have
//! been granted, and this release gives it back).

use rustc_hash::FxHashMap as HashMap;

use super::mutex::{Holds, MutexCounts};
use super::{
    Checker, Counts, Evidence, EvidenceLog, History, Safety, SafetyVerdict, Verdict, VerdictCounts,
};
use crate::history::{EventKind, Op, Section, in_time_order};
use crate::results::CellInfo;

/// The checker's name, its verdict's `checker`.
pub const NAME: &str = "reentrant";
/// Count and class: a release by a client that held nothing on the key.
pub const RELEASE_BY_NON_HOLDER: &str = "release_by_non_holder";
/// Count and class: a release by a client that held nothing certain, while an `info`
/// acquisition of it may have been granted.
pub const POSSIBLE_RELEASE_BY_NON_HOLDER: &str = "possible_release_by_non_holder";
/// Count: re-entries (grants to a client already holding the key), in the verdict only.
pub const REENTRIES: &str = "reentries";

/// The reentrant mutual-exclusion checker.
pub struct Reentrant;

/// The reentrant checker's counts: overlaps of outer holds by class (the cell's
/// `safety.overlaps`, as a mutex's) and releases by non-holders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReentrantCounts {
    /// Overlapping outer holds of different clients, by class.
    pub overlaps: MutexCounts,
    /// [`RELEASE_BY_NON_HOLDER`]: the cell's `safety.releases_by_non_holder`.
    pub releases_by_non_holder: u64,
    /// [`POSSIBLE_RELEASE_BY_NON_HOLDER`] (in the verdict only).
    pub possible_releases_by_non_holder: u64,
    /// [`REENTRIES`] (in the verdict only).
    pub reentries: u64,
}

impl Counts for ReentrantCounts {
    fn add_to(&self, safety: &mut Safety) {
        self.overlaps.add_to(safety);
        safety.releases_by_non_holder = Some(self.releases_by_non_holder);
    }

    fn named(&self) -> Vec<(&'static str, u64)> {
        let mut out = self.overlaps.named();
        out.extend([
            (RELEASE_BY_NON_HOLDER, self.releases_by_non_holder),
            (
                POSSIBLE_RELEASE_BY_NON_HOLDER,
                self.possible_releases_by_non_holder,
            ),
            (REENTRIES, self.reentries),
        ]);
        out
    }
}

/// A client's holds of one key, as the history's order tells them.
#[derive(Default)]
struct Holding {
    /// Holds open (grants not yet given back).
    depth: u64,
    /// `info` acquisitions no release has answered for yet.
    unknown: u64,
    /// The release that last gave back everything held, if any.
    last_emptied: Option<usize>,
}

impl Checker for Reentrant {
    fn name(&self) -> &'static str {
        NAME
    }

    fn sees_reentries(&self) -> bool {
        true
    }

    fn check(&self, history: &History, cell: &CellInfo) -> Verdict {
        let outer = outer_holds(history);
        // When each client's outer holds of a key run, to tell a re-entry that ended unknown
        // (it adds nothing) from an acquisition that may have taken the lock.
        let events = &history.events;
        let end = history.end_us(cell);
        let mut held: HashMap<(u32, &str), Vec<(u64, u64)>> = HashMap::default();
        for s in history
            .critical_sections()
            .iter()
            .filter(|s| outer[s.acquired_at()])
        {
            held.entry((s.client, s.key(events)))
                .or_default()
                .push((s.acquired_us(events), s.released_us(events).unwrap_or(end)));
        }
        // One client's outer holds of a key follow each other (sections come in grant order),
        // so the one that may contain `t` is the last granted at or before it.
        let holding_at = |c: u32, key: &str, t: u64| {
            held.get(&(c, key)).is_some_and(|spans| {
                let after = spans.partition_point(|&(from, _)| from <= t);
                after > 0 && t < spans[after - 1].1
            })
        };
        let holds = Holds::of(
            history,
            cell,
            |s: &Section| outer[s.acquired_at()],
            |c, key, t| !holding_at(c, key, t),
        );
        let (overlaps, mut log, _) = holds.overlaps(|_, _| true);
        let mut counts = ReentrantCounts {
            overlaps,
            ..ReentrantCounts::default()
        };
        releases(history, &mut counts, &mut log);

        let mut verdict = overlaps.verdict(self.name(), &holds, log, counts);
        if counts.releases_by_non_holder > 0 {
            verdict.validity = SafetyVerdict::Unsafe;
        } else if counts.possible_releases_by_non_holder > 0 {
            verdict.validity = verdict.validity.max(SafetyVerdict::Unknown);
        }
        verdict.summary = format!(
            "{}; {} releases by a client holding nothing ({} possible), {} re-entries",
            verdict.summary,
            counts.releases_by_non_holder,
            counts.possible_releases_by_non_holder,
            counts.reentries
        );
        verdict.counts = VerdictCounts::new(counts);
        verdict
    }
}

/// Which events are the grants of outer holds: `outer[i]` for an acquire `ok` at `i` that
/// found its client holding nothing on the key.
fn outer_holds(history: &History) -> Vec<bool> {
    let events = &history.events;
    let mut outer = vec![false; events.len()];
    // Per (client, key): where the current outer hold is given back, as (time, index) in the
    // order the sections were paired in; `None` while it is open to the end.
    let mut until: HashMap<(u32, &str), Option<(u64, usize)>> = HashMap::default();
    for s in history.critical_sections() {
        let at = (s.acquired_us(events), s.acquired_at());
        let key = (s.client, s.key(events));
        let nested = match until.get(&key) {
            Some(None) => true,
            Some(Some(released)) => at < *released,
            None => false,
        };
        if !nested {
            outer[s.acquired_at()] = true;
            until.insert(key, s.released_at().map(|r| (events.t_us(r), r)));
        }
    }
    outer
}

/// Counts re-entries and finds the releases by a client holding nothing, into `counts` and
/// `log`.
fn releases(history: &History, counts: &mut ReentrantCounts, log: &mut EvidenceLog) {
    let events = &history.events;
    let mut by: HashMap<(u32, &str), Holding> = HashMap::default();
    for i in in_time_order(events) {
        let e = events.at(i);
        let Some(c) = e.client() else { continue };
        let h = by.entry((c, e.key())).or_default();
        match (e.op(), e.kind()) {
            (Op::Acquire, EventKind::Ok) => {
                counts.reentries += u64::from(h.depth > 0);
                h.depth += 1;
            }
            (Op::Acquire, EventKind::Info) => h.unknown += 1,
            (Op::Release, EventKind::Invoke) if h.depth > 0 => {
                h.depth -= 1;
                if h.depth == 0 {
                    h.last_emptied = Some(i);
                }
            }
            (Op::Release, EventKind::Invoke) => {
                let possible = h.unknown > 0;
                let (validity, class) = if possible {
                    h.unknown -= 1;
                    counts.possible_releases_by_non_holder += 1;
                    (SafetyVerdict::Unknown, POSSIBLE_RELEASE_BY_NON_HOLDER)
                } else {
                    counts.releases_by_non_holder += 1;
                    (SafetyVerdict::Unsafe, RELEASE_BY_NON_HOLDER)
                };
                let last = h.last_emptied;
                log.push_with(e.t_us(), validity, class, || {
                    let before = last.map_or_else(
                        || format!("it was never granted {} before", e.key()),
                        |l| {
                            format!(
                                "its last hold of {} was given back at {} µs",
                                e.key(),
                                events.t_us(l)
                            )
                        },
                    );
                    let what = if possible {
                        format!(
                            "key {}: client {c} released at {} µs holding nothing certain ({before}); only an acquisition of it that ended unknown (info) may have been granted",
                            e.key(),
                            e.t_us()
                        )
                    } else {
                        format!(
                            "key {}: client {c} released at {} µs holding nothing: {before}, and it released more often than it was granted",
                            e.key(),
                            e.t_us()
                        )
                    };
                    Evidence::new(validity, class, what)
                        .key(e.key())
                        .client(c)
                        .events(history, last.into_iter().chain([i]))
                        .at(last.map(|l| events.t_us(l)).into_iter().chain([e.t_us()]))
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
