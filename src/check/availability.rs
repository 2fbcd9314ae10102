//! Availability: how long clients waited while nothing was granted, and whether a lock got
//! stuck.
//!
//! An **unavailable window** of a key is a stretch in which at least one client was waiting
//! for it (an acquire invoked and not yet answered) and no acquisition of it succeeded: it opens
//! when the first waiter arrives (or at a grant that leaves others waiting) and closes at the
//! next grant, when the last waiter gives up, or at the end of the history. The longest one,
//! over all keys, and the time from the first acquire invoke to the first grant are reported;
//! both include legitimate holds and faults (the nemesis issue attributes windows to faults).
//!
//! The verdict is `invalid` only for a **stuck lock**: on one key, a stretch with no grant and
//! no certain holder (no critical section of that key), from the first to the last moment a
//! client waited for it in vain (an acquisition that ended `fail` or `info`, or never ended),
//! lasting more than twice the longest lease TTL granted in the cell, with no nemesis fault
//! (invoke to its `ok`, or to the end if it never healed) overlapping it. Every lease ends
//! within its TTL, so such a lock outlived every lease (e.g. `SETNX` then `EXPIRE` with a crash
//! between leaves a key with no TTL). Two refinements keep it from false alarms: a wait that
//! ended in a grant proves nothing (the lock was free at its end), and a stretch never overlaps
//! an acquisition that ended `info`, from its invoke to its outcome (it may have been granted
//! anywhere in there: a fresh lease, after the lock had been free). Without a known TTL (0 counts as unreported) it is never
//! invalid.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::evidence::token_text;
use super::{
    Checker, Counts, Evidence, EvidenceLog, History, Safety, SafetyVerdict, Verdict, VerdictCounts,
};
use crate::history::{EventKind, Op, Operations, Section, in_time_order};
use crate::results::CellInfo;

/// The checker's name, its verdict's `checker`.
pub const NAME: &str = "availability";
/// Count: the longest unavailable window, µs.
pub const MAX_UNAVAILABLE_US: &str = "max_unavailable_us";
/// Count: first acquire invoke → first grant, µs (absent when nothing was granted).
pub const FIRST_ACQUISITION_US: &str = "first_acquisition_us";
/// Count and class: stretches in which a lock outlived every lease.
pub const STUCK_LOCKS: &str = "stuck_locks";
/// Count: the longest lease TTL granted, ms (absent when no grant had one).
pub const LONGEST_LEASE_MS: &str = "longest_lease_ms";
/// Class of the note naming the longest unavailable window.
pub const LONGEST_WINDOW: &str = "longest_unavailable_window";

/// The availability checker's counts; the ones the history may not give are `None`, and are
/// left out of the verdict, never 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AvailabilityCounts {
    /// [`MAX_UNAVAILABLE_US`]: the cell's `safety.max_unavailable_ms`, in ms there.
    pub max_unavailable_us: u64,
    /// [`FIRST_ACQUISITION_US`]: the cell's `safety.first_acquisition_ms`, in ms there.
    pub first_acquisition_us: Option<u64>,
    /// [`STUCK_LOCKS`]: the cell's `safety.stuck_locks`.
    pub stuck_locks: u64,
    /// [`LONGEST_LEASE_MS`] (in the verdict only).
    pub longest_lease_ms: Option<u64>,
}

impl Counts for AvailabilityCounts {
    fn add_to(&self, safety: &mut Safety) {
        let ms = |us: u64| us as f64 / 1000.0;
        safety.stuck_locks = self.stuck_locks;
        safety.max_unavailable_ms = ms(self.max_unavailable_us);
        safety.first_acquisition_ms = self.first_acquisition_us.map(ms);
    }

    fn named(&self) -> Vec<(&'static str, u64)> {
        let mut out = vec![
            (MAX_UNAVAILABLE_US, self.max_unavailable_us),
            (STUCK_LOCKS, self.stuck_locks),
        ];
        out.extend(self.first_acquisition_us.map(|f| (FIRST_ACQUISITION_US, f)));
        out.extend(self.longest_lease_ms.map(|t| (LONGEST_LEASE_MS, t)));
        out
    }
}

/// The availability checker.
pub struct Availability;

/// A window of one key: from, to, and the events that opened and closed it.
#[derive(Debug, Clone, Copy)]
struct Window<'a> {
    key: &'a str,
    from_us: u64,
    to_us: u64,
    opened_at: usize,
    closed_at: Option<usize>,
}

/// An acquisition's wait: invoke to outcome (or the end), with its outcome's kind.
#[derive(Debug, Clone, Copy)]
struct Wait {
    from_us: u64,
    to_us: u64,
    invoke: usize,
    outcome: Option<usize>,
    kind: Option<EventKind>,
}

/// The unavailable windows of every key, from one sweep in time order.
fn windows<'a>(history: &'a History, end: u64) -> Vec<Window<'a>> {
    struct State {
        waiting: HashSet<u32>,
        since: Option<(u64, usize)>,
    }
    let events = &history.events;
    let mut keys: HashMap<&str, State> = HashMap::default();
    let mut out = Vec::new();
    for i in in_time_order(events) {
        let e = events.at(i);
        let (Some(c), Op::Acquire) = (e.client(), e.op()) else {
            continue;
        };
        let key = e.key();
        let s = keys.entry(key).or_insert(State {
            waiting: HashSet::default(),
            since: None,
        });
        match e.kind() {
            EventKind::Invoke => {
                if s.waiting.is_empty() && s.since.is_none() {
                    s.since = Some((e.t_us(), i));
                }
                s.waiting.insert(c);
            }
            EventKind::Ok => {
                s.waiting.remove(&c);
                if let Some((from, at)) = s.since.take() {
                    out.push(Window {
                        key,
                        from_us: from,
                        to_us: e.t_us(),
                        opened_at: at,
                        closed_at: Some(i),
                    });
                }
                if !s.waiting.is_empty() {
                    s.since = Some((e.t_us(), i));
                }
            }
            EventKind::Fail | EventKind::Info => {
                s.waiting.remove(&c);
                if s.waiting.is_empty()
                    && let Some((from, at)) = s.since.take()
                {
                    out.push(Window {
                        key,
                        from_us: from,
                        to_us: e.t_us(),
                        opened_at: at,
                        closed_at: Some(i),
                    });
                }
            }
        }
    }
    for (key, s) in keys {
        if let Some((from, at)) = s.since {
            out.push(Window {
                key,
                from_us: from,
                to_us: end.max(from),
                opened_at: at,
                closed_at: None,
            });
        }
    }
    out
}

/// Parts of `[from, to)` not covered by `cover` (intervals sorted by start).
fn uncovered(from: u64, to: u64, cover: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = from;
    for &(a, b) in cover {
        if b <= at {
            continue;
        }
        if a >= to {
            break;
        }
        if a > at {
            out.push((at, a));
        }
        at = at.max(b);
    }
    if at < to {
        out.push((at, to));
    }
    out
}

impl Checker for Availability {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&self, history: &History, cell: &CellInfo) -> Verdict {
        let events = &history.events;
        let end = history.end_us(cell);
        let mut log = EvidenceLog::default();
        let mut counts = AvailabilityCounts::default();

        // The longest unavailable window.
        let all = windows(history, end);
        let longest = all
            .iter()
            .max_by_key(|w| (w.to_us - w.from_us, std::cmp::Reverse(w.from_us)));
        let max_unavailable = longest.map_or(0, |w| w.to_us - w.from_us);
        counts.max_unavailable_us = max_unavailable;
        if let Some(w) = longest.filter(|_| max_unavailable > 0) {
            let closed = match w.closed_at.map(|i| events.at(i)) {
                Some(e) if e.kind() == EventKind::Ok => format!(
                    "client {} was granted it ({})",
                    e.client().unwrap_or_default(),
                    token_text(e.token())
                ),
                Some(_) => "the last waiter gave up".to_string(),
                None => "the history ended".to_string(),
            };
            let ev = Evidence::new(
                SafetyVerdict::Safe,
                LONGEST_WINDOW,
                format!(
                    "key {}: clients waited {:.3} ms with nothing granted, from {} µs until {} µs, when {closed}",
                    w.key,
                    max_unavailable as f64 / 1000.0,
                    w.from_us,
                    w.to_us
                ),
            )
            .key(w.key)
            .at([w.from_us, w.to_us])
            .events(history, [Some(w.opened_at), w.closed_at].into_iter().flatten());
            log.push(w.from_us, ev);
        }

        // Time to the first acquisition, and the longest lease.
        let acquire = |kind| {
            in_time_order(events).find(|&i| {
                let e = events.at(i);
                e.op() == Op::Acquire && e.kind() == kind && e.client().is_some()
            })
        };
        let first_acquisition = match (acquire(EventKind::Invoke), acquire(EventKind::Ok)) {
            (Some(inv), Some(ok)) => {
                Some(events.at(ok).t_us().saturating_sub(events.at(inv).t_us()))
            }
            (None, Some(_)) => Some(0),
            _ => None,
        };
        counts.first_acquisition_us = first_acquisition;
        let longest_lease = events
            .iter()
            .filter(|e| e.op() == Op::Acquire && e.kind() == EventKind::Ok)
            .filter_map(|e| e.ttl_ms())
            .filter(|&t| t > 0)
            .max();
        counts.longest_lease_ms = longest_lease;

        let stuck = longest_lease.map_or(0, |ttl| stuck_locks(history, end, ttl, &mut log));
        counts.stuck_locks = stuck;

        let validity = if stuck > 0 {
            SafetyVerdict::Unsafe
        } else {
            SafetyVerdict::Safe
        };
        let first = first_acquisition.map_or("nothing granted".to_string(), |f| {
            format!(
                "first acquisition {:.3} ms after the first attempt",
                f as f64 / 1000.0
            )
        });
        let lease = longest_lease.map_or(
            "no lease TTL known, so no lock is judged stuck".to_string(),
            |t| format!("longest lease {t} ms"),
        );
        let summary = format!(
            "longest unavailable window {:.3} ms; {first}; {stuck} stuck locks ({lease})",
            max_unavailable as f64 / 1000.0
        );
        let (evidence, findings) = log.finish();
        Verdict {
            checker: self.name().into(),
            validity,
            summary,
            evidence,
            findings,
            counts: VerdictCounts::new(counts),
        }
    }
}

/// Counts (and logs) the stretches in which a key had waiters but neither a grant nor a
/// certain holder, nor an open fault, for more than 2 × `ttl_ms`.
fn stuck_locks(history: &History, end: u64, ttl_ms: u64, log: &mut EvidenceLog) -> u64 {
    let events = &history.events;
    let limit = 2 * ttl_ms * 1000;
    let sections = history.critical_sections();
    let ops = history.operations();

    // Faults, from their start to their heal (or the end when they never healed for sure).
    let mut faults: Vec<(u64, u64)> = ops
        .ops
        .iter()
        .filter(|o| o.op == Op::Fault)
        .map(|o| {
            let to = match o.outcome {
                Some(i) if events.at(i).kind() == EventKind::Ok => events.at(i).t_us(),
                _ => end,
            };
            (events.at(o.invoke).t_us(), to)
        })
        .collect();
    faults.sort_unstable();

    let mut holds: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for s in sections {
        // A grant is a point of availability even when released in the same microsecond.
        let from = s.acquired_us(events);
        let to = s.released_us(events).unwrap_or(end).max(from + 1);
        holds.entry(s.key(events)).or_default().push((from, to));
    }
    let mut waits: BTreeMap<&str, Vec<Wait>> = BTreeMap::new();
    for o in ops
        .ops
        .iter()
        .filter(|o| o.op == Op::Acquire && o.process.client().is_some())
    {
        let inv = events.at(o.invoke);
        waits.entry(inv.key()).or_default().push(Wait {
            from_us: inv.t_us(),
            to_us: o.outcome.map_or(end, |i| events.at(i).t_us()),
            invoke: o.invoke,
            outcome: o.outcome,
            kind: o.outcome_kind(events),
        });
    }

    let mut stuck = 0;
    for (key, ws) in &waits {
        // An acquisition that ended unknown (info) may have been granted anywhere between its
        // invoke and its outcome: a fresh lease, after the lock may have been free. A stuck
        // stretch is judged apart on each side of one, never across it: it covers like a hold.
        let mut cover: Vec<(u64, u64)> = holds.get(key).cloned().unwrap_or_default();
        cover.extend(
            ws.iter()
                .filter(|w| w.kind == Some(EventKind::Info))
                .map(|w| (w.from_us, w.to_us.max(w.from_us + 1))),
        );
        cover.sort_unstable();
        // Waiting in vain while nobody held the key: the lock was taken, by nobody the history
        // shows. A wait that ended in a grant proves nothing of the kind.
        let vain: Vec<&Wait> = ws
            .iter()
            .filter(|w| w.kind != Some(EventKind::Ok))
            .collect();
        let first = ws.iter().map(|w| w.from_us).min().unwrap_or(0);
        let mut sweep = VainSweep::new(&vain);
        for (a, b) in uncovered(first, end.max(first), &cover) {
            let Some((s0, s1, first_vain, last_vain, waiters)) = sweep.within(a, b) else {
                continue;
            };
            if s1 - s0 <= limit || faults.iter().any(|&(fa, fb)| fa < s1 && fb > s0) {
                continue;
            }
            stuck += 1;
            let found = Stretch {
                key,
                from_us: s0,
                to_us: s1,
                first: first_vain,
                last: last_vain,
                waiters,
            };
            log.push_with(s0, SafetyVerdict::Unsafe, STUCK_LOCKS, || {
                stuck_evidence(history, sections, ops, &found, ttl_ms)
            });
        }
    }
    stuck
}

/// The vain waits of one key (sorted by invoke), asked about stretches in time order: which
/// of them overlap `[a, b)`, in O(log n) a stretch.
struct VainSweep<'a> {
    vain: &'a [&'a Wait],
    /// The waits' ends, sorted.
    ends: Vec<u64>,
    /// `latest[i]`: the index, among `vain[..=i]`, of the one ending last (the later on ties).
    latest: Vec<usize>,
    /// Waits invoked before the current stretch's end, earliest invoke first; those over
    /// before its start are dropped as the stretches advance.
    entered: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>>,
    next: usize,
}

impl<'a> VainSweep<'a> {
    fn new(vain: &'a [&'a Wait]) -> VainSweep<'a> {
        let mut ends: Vec<u64> = vain.iter().map(|w| w.to_us).collect();
        ends.sort_unstable();
        let mut latest: Vec<usize> = Vec::with_capacity(vain.len());
        for (i, w) in vain.iter().enumerate() {
            let best = match latest.last() {
                Some(&j) if vain[j].to_us > w.to_us => j,
                _ => i,
            };
            latest.push(best);
        }
        VainSweep {
            vain,
            ends,
            latest,
            entered: std::collections::BinaryHeap::new(),
            next: 0,
        }
    }

    /// For the stretch `[a, b)` (after every earlier one asked): the part of it the vain waits
    /// overlapping it span, the earliest invoked and the last ending of them, and how many
    /// they are; `None` when none overlaps it.
    fn within(&mut self, a: u64, b: u64) -> Option<(u64, u64, &'a Wait, &'a Wait, usize)> {
        // Invoked before b: a prefix of the waits (sorted by invoke).
        while self.next < self.vain.len() && self.vain[self.next].from_us < b {
            let w = self.vain[self.next];
            self.entered.push(std::cmp::Reverse((w.from_us, self.next)));
            self.next += 1;
        }
        // Over by a: over for every later stretch too.
        while let Some(&std::cmp::Reverse((_, i))) = self.entered.peek() {
            if self.vain[i].to_us > a {
                break;
            }
            self.entered.pop();
        }
        let &std::cmp::Reverse((from, i)) = self.entered.peek()?;
        let last = self.vain[self.latest[self.next - 1]];
        let waiters = self
            .next
            .saturating_sub(self.ends.partition_point(|&t| t <= a));
        Some((from.max(a), last.to_us.min(b), self.vain[i], last, waiters))
    }
}

/// A stuck stretch of `key`, with the first and the last of the waits that found it taken
/// and how many did.
struct Stretch<'a> {
    key: &'a str,
    from_us: u64,
    to_us: u64,
    first: &'a Wait,
    last: &'a Wait,
    waiters: usize,
}

fn stuck_evidence(
    history: &History,
    sections: &[Section],
    ops: &Operations,
    found: &Stretch,
    ttl_ms: u64,
) -> Evidence {
    let events = &history.events;
    let (key, s0, s1) = (found.key, found.from_us, found.to_us);
    let mut lines: Vec<usize> = Vec::new();
    let mut ev = Evidence::new(SafetyVerdict::Unsafe, STUCK_LOCKS, "")
        .key(key)
        .at([s0, s1]);
    // Built only for the findings kept (see `EvidenceLog::push_with`), so a scan is cheap here.
    let last_holder = sections
        .iter()
        .filter(|s| s.key(events) == key && s.released_us(events).is_some_and(|r| r <= s0))
        .max_by_key(|s| s.released_us(events))
        .map(|s| s.spelled(events));
    let holder = match &last_holder {
        Some(s) => {
            lines.extend([Some(s.acquired_at), s.released_at].into_iter().flatten());
            ev = ev.client(s.client).token(s.token);
            format!(
                "the last holder, client {} ({}), released at {} µs",
                s.client,
                token_text(s.token),
                s.released_us.unwrap_or_default()
            )
        }
        None => "nobody held it before".to_string(),
    };
    let unknown = ops
        .ops
        .iter()
        .filter(|o| o.op == Op::Acquire && events.at(o.invoke).key() == key)
        .filter(|o| {
            o.outcome_kind(events) == Some(EventKind::Info) && events.at(o.invoke).t_us() < s1
        })
        .max_by_key(|o| events.at(o.invoke).t_us());
    let unknown = match unknown {
        Some(o) => {
            lines.extend([Some(o.invoke), o.outcome].into_iter().flatten());
            let c = o.process.client().unwrap_or_default();
            ev = ev.client(c);
            format!(
                "; client {c}'s acquisition invoked at {} µs ended unknown (info){}",
                events.at(o.invoke).t_us(),
                o.outcome
                    .map_or(String::new(), |i| format!(" at {} µs", events.at(i).t_us()))
            )
        }
        None => String::new(),
    };
    lines.push(found.first.invoke);
    lines.extend(found.last.outcome);
    ev.what = format!(
        "key {key}: no grant and no holder from {s0} µs to {s1} µs ({:.3} ms, more than 2 × the longest lease of {ttl_ms} ms, with no fault open) while {} acquisitions waited in vain; {holder}{unknown}: the lock outlived every lease",
        (s1 - s0) as f64 / 1000.0,
        found.waiters
    );
    ev.events(history, lines)
}

#[cfg(test)]
mod tests;
