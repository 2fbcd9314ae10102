//! Mutual exclusion: per key, the holds of different clients must not overlap.
//!
//! A certain hold runs from the acquire `ok` to the same client's release `invoke` (open to the
//! end of the history if it never released): inner bounds, so two that overlap certainly did.
//! Each overlap of an earlier grant A with a later grant B (B granted at `t` inside A's hold)
//! is classified by what A knew at `t`:
//! - [`TOLD_AND_WENT_ON`]: A had been told its lease was lost (`lease_lost`) at or before `t`;
//! - [`EXPIRED_UNTOLD`]: A was not told by `t`, but its lease had (probably) expired: `t` is
//!   past A's grant + its `ttl_ms` (renewals are not in the history, so past that point expiry
//!   without a signal is the explanation named; a TTL of 0 is one the recipe did not report,
//!   not a lease that expired at once), or, with no TTL reported, A was told only later (a
//!   paused client);
//! - [`GRANTED_TWICE`]: otherwise: both inside their leases, nobody told, the service granted
//!   the lock twice. A grant inside A's first lease is this class even if A is told later:
//!   expiry cannot explain it (the service lost the lock: a master restarted empty, a failover
//!   to a replica that never had the key).
//!
//! An acquisition whose outcome is `info` may have held the lock from its invoke to that
//! outcome (a possible hold). Its overlap with another client's certain hold is
//! [`UNKNOWN`], unless the resource shows the possible holder acted: an accepted `write` by it
//! on that key inside both holds, the instant both certainly held. That makes it a certain
//! overlap, classified as above (with the write as `t` when the certain hold was granted
//! first). Two possible holds never make a certain overlap: each write proves a hold only at
//! its own instant.
//!
//! The holds and these rules are `Holds`, which the checkers of the other kinds of lock reuse:
//! `reentrant` (outer holds only) and `rwlock` (only overlaps with a writer among them).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use super::evidence::token_text;
use super::{
    Checker, Counts, Evidence, EvidenceLog, History, Safety, SafetyVerdict, Verdict, VerdictCounts,
};
use crate::history::{EventKind, Events, Mode, Op, Section, in_time_order};
use crate::results::CellInfo;

/// The checker's name, its verdict's `checker`.
pub const NAME: &str = "mutex";
/// Count and class: both inside their leases, nobody told.
pub const GRANTED_TWICE: &str = "granted_twice";
/// Count and class: the earlier holder had been told its lease was lost and went on.
pub const TOLD_AND_WENT_ON: &str = "told_and_went_on";
/// Count and class: the earlier holder's lease had expired without it being told (yet).
pub const EXPIRED_UNTOLD: &str = "expired_untold";
/// Count and class: an overlap that needs an `info` acquisition to have been granted.
pub const UNKNOWN: &str = "unknown";

/// The mutual-exclusion checker.
pub struct Mutex;

/// The mutex checker's counts: overlapping holds by class (the cell's `safety.overlaps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MutexCounts {
    /// [`GRANTED_TWICE`].
    pub granted_twice: u64,
    /// [`TOLD_AND_WENT_ON`].
    pub told_and_went_on: u64,
    /// [`EXPIRED_UNTOLD`].
    pub expired_untold: u64,
    /// [`UNKNOWN`].
    pub unknown: u64,
}

impl MutexCounts {
    fn of_class(&mut self, class: &str) -> &mut u64 {
        match class {
            GRANTED_TWICE => &mut self.granted_twice,
            TOLD_AND_WENT_ON => &mut self.told_and_went_on,
            EXPIRED_UNTOLD => &mut self.expired_untold,
            UNKNOWN => &mut self.unknown,
            other => unreachable!("mutex class {other} is not counted"),
        }
    }
}

impl Counts for MutexCounts {
    fn add_to(&self, safety: &mut Safety) {
        let o = &mut safety.overlaps;
        o.granted_twice = self.granted_twice;
        o.told_and_went_on = self.told_and_went_on;
        o.expired_untold = self.expired_untold;
        o.unknown = self.unknown;
    }

    fn named(&self) -> Vec<(&'static str, u64)> {
        vec![
            (GRANTED_TWICE, self.granted_twice),
            (TOLD_AND_WENT_ON, self.told_and_went_on),
            (EXPIRED_UNTOLD, self.expired_untold),
            (UNKNOWN, self.unknown),
        ]
    }
}

/// A hold of a key, certain (a critical section) or possible (an `info` acquisition).
///
/// Kept small (48 bytes; a history has millions): what its events say is read from them.
#[derive(Debug)]
pub(super) struct Hold<'a> {
    events: &'a Events,
    from_us: u64,
    to_us: u64,
    client: u32,
    /// Event indices: grant (or invoke), release (or info outcome), lost signal; [`NONE`] for
    /// none.
    from_i: u32,
    to_i: u32,
    lost_i: u32,
    /// Released (certain) or ended unknown (possible); `false` when open to the end.
    ended: bool,
    certain: bool,
}

/// No event (in a [`Hold`]'s indices).
const NONE: u32 = u32::MAX;

fn index(i: Option<usize>) -> u32 {
    i.map_or(NONE, |i| {
        u32::try_from(i).expect("fewer than 2^32 - 1 events")
    })
}

impl<'a> Hold<'a> {
    fn start_at(&self) -> usize {
        self.from_i as usize
    }
    fn end_at(&self) -> Option<usize> {
        (self.to_i != NONE).then_some(self.to_i as usize)
    }
    fn lost_at(&self) -> Option<usize> {
        (self.lost_i != NONE).then_some(self.lost_i as usize)
    }
    fn key(&self) -> &'a str {
        self.events.at(self.start_at()).key()
    }
    /// A certain hold's grant token; a possible one's, its unknown outcome's.
    fn token(&self) -> Option<u64> {
        match (self.certain, self.end_at()) {
            (true, _) => self.events.at(self.start_at()).token(),
            (false, Some(out)) => self.events.at(out).token(),
            (false, None) => None,
        }
    }
    /// A certain hold's lease TTL; none known for a possible one.
    fn ttl_ms(&self) -> Option<u64> {
        self.certain
            .then(|| self.events.at(self.start_at()).ttl_ms())
            .flatten()
    }
    /// Whether it reads a read-write lock (shares it with other readers): the `mode` of its
    /// grant (certain) or of its invoke (possible).
    pub(super) fn reads(&self) -> bool {
        Mode::is_read(self.events.at(self.start_at()).mode())
    }
    fn lost_us(&self) -> Option<u64> {
        self.lost_at().map(|i| self.events.t_us(i))
    }
    fn events(&self) -> impl Iterator<Item = usize> {
        [Some(self.start_at()), self.end_at(), self.lost_at()]
            .into_iter()
            .flatten()
    }
    fn describe(&self) -> String {
        let until = if self.ended {
            format!("{} µs", self.to_us)
        } else {
            "the end of the history".to_string()
        };
        // A read-write lock's holds say how they held; a mutex's have no mode to say.
        let mode = match self.events.at(self.start_at()).mode() {
            Some(Mode::Read) => " to read",
            Some(Mode::Write) => " to write",
            None => "",
        };
        if self.certain {
            format!(
                "client {} ({}) held{mode} from {} µs to {until}",
                self.client,
                token_text(self.token()),
                self.from_us
            )
        } else {
            format!(
                "client {}'s acquisition{mode} invoked at {} µs ended unknown (info) at {until}",
                self.client, self.from_us
            )
        }
    }
}

/// Why A still held at `t` (the class and its reason in words).
fn classify(a: &Hold, t: u64) -> (&'static str, String) {
    if let Some(lost) = a.lost_us().filter(|&l| l <= t) {
        return (
            TOLD_AND_WENT_ON,
            format!(
                "client {} had been told its lease was lost at {lost} µs and went on",
                a.client
            ),
        );
    }
    // Inside A's first lease (granted with `ttl_ms` of validity, which renewals only extend), B's
    // grant cannot be explained by expiry, even if A was told later: the service lost the lock
    // (a master restarted empty, a failover to a replica that never had the key).
    let within_first_lease = a
        .ttl_ms()
        .filter(|&ttl| ttl > 0)
        .is_some_and(|ttl| t < a.from_us + ttl * 1000);
    if let Some(lost) = a.lost_us().filter(|_| !within_first_lease) {
        return (
            EXPIRED_UNTOLD,
            format!(
                "client {}'s lease had expired untold: it was told only at {lost} µs, after",
                a.client
            ),
        );
    }
    // A TTL of 0 is one the recipe did not report (the mock's default), not a lease that
    // expired at once.
    if let Some(ttl) = a.ttl_ms().filter(|&t| t > 0) {
        let expiry = a.from_us + ttl * 1000;
        if t > expiry {
            return (
                EXPIRED_UNTOLD,
                format!(
                    "client {}'s lease (ttl {ttl} ms) had run out untold at {expiry} µs",
                    a.client
                ),
            );
        }
    }
    (
        GRANTED_TWICE,
        "both inside their leases and neither told: the service granted the lock twice".into(),
    )
}

impl Checker for Mutex {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&self, history: &History, cell: &CellInfo) -> Verdict {
        let holds = Holds::of(history, cell, |_| true, |_, _, _| true);
        let (counts, log, _) = holds.overlaps(|_, _| true);
        counts.verdict(self.name(), &holds, log, counts)
    }
}

/// The holds of a cell's keys an exclusion checker judges (this one, and the checkers of the
/// other kinds of lock that reuse its overlap rules: `reentrant`, `rwlock`).
pub(super) struct Holds<'a> {
    history: &'a History,
    /// The certain holds first, then the possible ones.
    holds: Vec<Hold<'a>>,
    /// How many of `holds` are certain.
    certain: usize,
    /// Accepted writes per (client, key), in time order.
    writes: HashMap<(u32, &'a str), Vec<usize>>,
}

impl<'a> Holds<'a> {
    /// The critical sections `section` keeps as certain holds, and as possible holds the
    /// `info` acquisitions (client, key, invoke time) that `possible` keeps.
    pub(super) fn of(
        history: &'a History,
        cell: &CellInfo,
        section: impl Fn(&Section) -> bool,
        possible: impl Fn(u32, &str, u64) -> bool,
    ) -> Holds<'a> {
        let events = &history.events;
        let end = history.end_us(cell);
        let mut holds: Vec<Hold> = history
            .critical_sections()
            .iter()
            .filter(|s| section(s))
            .map(|s| Hold {
                events,
                client: s.client,
                from_us: s.acquired_us(events),
                to_us: s.released_us(events).unwrap_or(end),
                ended: s.released_at().is_some(),
                certain: true,
                from_i: index(Some(s.acquired_at())),
                to_i: index(s.released_at()),
                lost_i: index(s.lost_at()),
            })
            .collect();
        let certain = holds.len();

        // Accepted writes and lost signals per (client, key), in time order.
        let mut writes: HashMap<(u32, &str), Vec<usize>> = HashMap::default();
        let mut lost: HashMap<(u32, &str), Vec<usize>> = HashMap::default();
        for i in in_time_order(events) {
            let e = events.at(i);
            let Some(c) = e.client() else { continue };
            match (e.op(), e.kind()) {
                (Op::Write, EventKind::Ok) => writes.entry((c, e.key())).or_default().push(i),
                (Op::LeaseLost, _) => lost.entry((c, e.key())).or_default().push(i),
                _ => {}
            }
        }
        for op in &history.operations().ops {
            let (Some(c), Op::Acquire, Some(out)) = (op.process.client(), op.op, op.outcome) else {
                continue;
            };
            if events.at(out).kind() != EventKind::Info {
                continue;
            }
            let key = events.at(op.invoke).key();
            let from_us = events.at(op.invoke).t_us();
            if !possible(c, key, from_us) {
                continue;
            }
            let lost_at = lost.get(&(c, key)).and_then(|l| {
                l.get(l.partition_point(|&i| events.at(i).t_us() < from_us))
                    .copied()
            });
            holds.push(Hold {
                events,
                client: c,
                from_us,
                to_us: events.at(out).t_us(),
                ended: true,
                certain: false,
                from_i: index(Some(op.invoke)),
                to_i: index(Some(out)),
                lost_i: index(lost_at),
            });
        }
        Holds {
            history,
            holds,
            certain,
            writes,
        }
    }

    /// Judges every overlap of two clients' holds of one key that `conflict` says exclude each
    /// other (for a mutex, all of them): the counts by class, the evidence, and how many
    /// overlaps `conflict` let pass.
    pub(super) fn overlaps(
        &self,
        conflict: impl Fn(&Hold, &Hold) -> bool,
    ) -> (MutexCounts, EvidenceLog, u64) {
        let mut by_key: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
        for h in &self.holds {
            by_key.entry(h.key()).or_default().push(h);
        }
        let mut counts = MutexCounts::default();
        let mut log = EvidenceLog::default();
        let mut allowed = 0;
        for (key, mut hs) in by_key {
            // Stable: holds granted in the same microsecond keep their order.
            hs.sort_by_key(|h| h.from_us);
            for (a, b) in overlapping_pairs(&hs) {
                let (a, b) = (hs[a], hs[b]);
                if !conflict(a, b) {
                    allowed += 1;
                    continue;
                }
                let (validity, class, t, write) = judge(self.history, &self.writes, key, a, b);
                *counts.of_class(class) += 1;
                log.push_with(t, validity, class, || {
                    evidence(self.history, key, a, b, (validity, class, t, write))
                });
            }
        }
        (counts, log, allowed)
    }
}

impl MutexCounts {
    /// Certain overlaps of any class.
    pub(super) fn violations(&self) -> u64 {
        self.granted_twice + self.told_and_went_on + self.expired_untold
    }

    /// The verdict of checker `name` whose overlaps of `holds` are these counts and `log`,
    /// with `counts` (these, or the checker's own counts holding them) as its counts.
    pub(super) fn verdict(
        &self,
        name: &str,
        holds: &Holds,
        log: EvidenceLog,
        counts: impl Counts + 'static,
    ) -> Verdict {
        let violations = self.violations();
        let validity = if violations > 0 {
            SafetyVerdict::Unsafe
        } else if self.unknown > 0 {
            SafetyVerdict::Unknown
        } else {
            SafetyVerdict::Safe
        };
        let summary = format!(
            "{violations} overlapping holds ({} granted twice, {} told and went on, {} expired untold), {} possible overlaps with unknown acquisitions; {} holds, {} unknown acquisitions",
            self.granted_twice,
            self.told_and_went_on,
            self.expired_untold,
            self.unknown,
            holds.certain,
            holds.holds.len() - holds.certain
        );
        let (evidence, findings) = log.finish();
        Verdict {
            checker: name.into(),
            validity,
            summary,
            evidence,
            findings,
            counts: VerdictCounts::new(counts),
        }
    }
}

/// Every pair (a, b) of indices into `hs` (holds of one key sorted by grant) with a < b whose
/// holds overlap and belong to different clients, in the order of a then b.
///
/// One sweep in grant order keeps each client's holds still open; a hold ends the first time a
/// later grant finds it over. Each other client's open holds at b's grant all overlap b, so the
/// cost is the holds plus the pairs found: linear in a history with no overlap, whatever its
/// length or how long one client keeps a key.
fn overlapping_pairs(hs: &[&Hold]) -> Vec<(usize, usize)> {
    let mut open: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let mut pairs = Vec::new();
    for (ib, b) in hs.iter().enumerate() {
        open.retain(|&client, held| {
            if client == b.client {
                return true;
            }
            held.retain(|&ia| hs[ia].to_us > b.from_us);
            pairs.extend(held.iter().map(|&ia| (ia, ib)));
            !held.is_empty()
        });
        open.entry(b.client).or_default().push(ib);
    }
    // The order the findings were pushed in before the sweep (by a, then b): ties of time keep it.
    pairs.sort_unstable();
    pairs
}

/// What an overlap is: the judgement of `a` (granted first) and `b` on `key`, with the write
/// that proved a possible hold, if one did.
type Judged = (SafetyVerdict, &'static str, u64, Option<usize>);

/// The overlap of `a` (granted first) and `b` on `key`: its validity, class and time, and the
/// accepted write that proved a possible hold.
fn judge(
    history: &History,
    writes: &HashMap<(u32, &str), Vec<usize>>,
    key: &str,
    a: &Hold,
    b: &Hold,
) -> Judged {
    let events = &history.events;
    // With a possible hold, the overlap is certain only at an accepted write by its client
    // inside both holds: the first write from the later of the two starts is the only
    // candidate, since any later one is later against both ends too.
    let proof = match (a.certain, b.certain) {
        (true, true) => Some(None),
        (true, false) | (false, true) => {
            let (p, s) = if a.certain { (b, a) } else { (a, b) };
            let from = p.from_us.max(s.from_us);
            writes
                .get(&(p.client, key))
                .and_then(|ws| ws.get(ws.partition_point(|&w| events.at(w).t_us() < from)))
                .copied()
                .filter(|&w| {
                    let t = events.at(w).t_us();
                    t <= p.to_us && t < s.to_us
                })
                .map(Some)
        }
        (false, false) => None,
    };
    let Some(write) = proof else {
        return (SafetyVerdict::Unknown, UNKNOWN, b.from_us, None);
    };
    // B's grant, or for a possible B granted somewhere before its write, that write.
    let t = match (b.certain, write) {
        (false, Some(w)) => events.at(w).t_us(),
        _ => b.from_us,
    };
    (SafetyVerdict::Unsafe, classify(a, t).0, t, write)
}

/// The evidence of the overlap of `a` and `b` on `key`, as [`judge`] found it.
fn evidence(history: &History, key: &str, a: &Hold, b: &Hold, judged: Judged) -> Evidence {
    let events = &history.events;
    let (validity, class, t, write) = judged;
    let mut ev = Evidence::new(validity, class, "")
        .key(key)
        .client(a.client)
        .client(b.client)
        .token(a.token())
        .token(b.token())
        .events(history, a.events().chain(b.events()))
        .events(history, write)
        .at([a.from_us, t]);
    if validity == SafetyVerdict::Unknown {
        ev.what = format!(
            "key {key}: {} and {}: they overlap only if the unknown acquisition was granted, and no accepted write by its client inside the other's hold shows it was",
            a.describe(),
            b.describe()
        );
        return ev;
    }
    let why = classify(a, t).1;
    let proved = write.map_or(String::new(), |w| {
        format!(
            " (client {}'s accepted write at {} µs shows its unknown acquisition held)",
            events.at(w).client().unwrap_or_default(),
            events.at(w).t_us()
        )
    });
    ev.what = format!(
        "key {key}: {}, and client {} ({}) held at {t} µs{proved}: {why}",
        a.describe(),
        b.client,
        token_text(b.token())
    );
    ev
}

#[cfg(test)]
mod tests;
