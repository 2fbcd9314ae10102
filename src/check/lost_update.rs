//! Lost updates: per key, the protected register's accepted writes minus its increase.
//!
//! Every critical section reads the register and writes back the value + 1, so with mutual
//! exclusion each accepted write raises it by one. The increase is the value of the last
//! accepted write (in time order) minus the initial value: 0 (every cell starts from a fresh
//! register), unless the first accepted access to the key is a read of another value (a
//! register that did not start empty), whose value is then the start. Refused accesses (the
//! fenced register's `fail`) changed nothing and are left out. The evidence is each pair of
//! accepted writes of the same value: two critical sections read the same `v` and both wrote
//! `v + 1`.
//!
//! Accesses that name a `slot` (a semaphore's holders, each with a register of its own) are
//! judged per key and slot, as registers of their own.

use std::collections::BTreeMap;

use super::evidence::token_text;
use super::{
    Checker, Counts, Evidence, EvidenceLog, History, Safety, SafetyVerdict, Verdict, VerdictCounts,
};
use crate::history::{EventKind, EventRef, Events, Op, in_time_order};
use crate::results::CellInfo;

/// The checker's name, its verdict's `checker`.
pub const NAME: &str = "lost_update";
/// Count: accepted writes whose increment the register does not show.
pub const LOST_UPDATES: &str = "lost_updates";
/// Count: accepted writes.
pub const ACCEPTED_WRITES: &str = "accepted_writes";
/// Class of the evidence: two accepted writes of the same value.
pub const SAME_VALUE: &str = "lost_update";

/// The lost-update checker.
pub struct LostUpdate;

/// The lost-update checker's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostUpdateCounts {
    /// [`LOST_UPDATES`]: the cell's `safety.lost_updates`.
    pub lost_updates: u64,
    /// [`ACCEPTED_WRITES`] (in the verdict only).
    pub accepted_writes: u64,
}

impl Counts for LostUpdateCounts {
    fn add_to(&self, safety: &mut Safety) {
        safety.lost_updates = self.lost_updates;
    }

    fn named(&self) -> Vec<(&'static str, u64)> {
        vec![
            (LOST_UPDATES, self.lost_updates),
            (ACCEPTED_WRITES, self.accepted_writes),
        ]
    }
}

/// One key's accepted accesses, in time order (event indices).
#[derive(Default)]
struct RegisterTrail {
    reads: Vec<usize>,
    writes: Vec<usize>,
    /// The first accepted access, if a read.
    first_read: Option<usize>,
    seen: bool,
}

impl Checker for LostUpdate {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&self, history: &History, _cell: &CellInfo) -> Verdict {
        let events = &history.events;
        // One register per key, or per key and slot where the accesses name one (a semaphore's
        // holders each have their own).
        let mut keys: BTreeMap<(&str, Option<u64>), RegisterTrail> = BTreeMap::new();
        for i in in_time_order(events) {
            let e = events.at(i);
            if e.kind() != EventKind::Ok || !matches!(e.op(), Op::Read | Op::Write) {
                continue;
            }
            let r = keys.entry((e.key(), e.slot())).or_default();
            if !r.seen && e.op() == Op::Read {
                r.first_read = Some(i);
            }
            r.seen = true;
            match e.op() {
                Op::Read => r.reads.push(i),
                _ => r.writes.push(i),
            }
        }

        let (mut lost_total, mut writes_total) = (0u64, 0u64);
        let mut log = EvidenceLog::default();
        for (&(key, slot), r) in &keys {
            let Some(&last) = r.writes.last() else {
                continue;
            };
            let register = register_text(key, slot);
            let initial = r.first_read.and_then(|i| events.at(i).value()).unwrap_or(0);
            let increase = events.at(last).value().unwrap_or(0).saturating_sub(initial);
            let accepted = r.writes.len() as u64;
            let lost = accepted.saturating_sub(increase);
            writes_total += accepted;
            lost_total += lost;
            if lost == 0 {
                continue;
            }
            let mut first_of: BTreeMap<u64, usize> = BTreeMap::new();
            let mut pairs = 0;
            for &w in &r.writes {
                let Some(v) = events.at(w).value() else {
                    continue;
                };
                match first_of.get(&v) {
                    None => {
                        first_of.insert(v, w);
                    }
                    Some(&earlier) => {
                        pairs += 1;
                        let ev = same_value(history, &register, r, earlier, w).key(key);
                        log.push(events.at(w).t_us(), ev);
                    }
                }
            }
            if pairs == 0 {
                // Overwritten by smaller values: no pair to show, so the key's totals.
                let ev = Evidence::new(
                    SafetyVerdict::Unsafe,
                    LOST_UPDATES,
                    format!(
                        "{register}: {accepted} accepted writes raised the register from {initial} to {} ({increase}): {lost} updates lost",
                        events.at(last).value().unwrap_or(0)
                    ),
                )
                .key(key)
                .at([events.at(r.writes[0]).t_us(), events.at(last).t_us()])
                .events(history, [r.writes[0], last]);
                log.push(events.at(last).t_us(), ev);
            }
        }

        let validity = if lost_total > 0 {
            SafetyVerdict::Unsafe
        } else {
            SafetyVerdict::Safe
        };
        let slots = if keys.keys().any(|(_, slot)| slot.is_some()) {
            " (by key and slot)"
        } else {
            ""
        };
        let summary = format!(
            "{lost_total} lost updates: {writes_total} accepted writes over {} keys{slots}",
            keys.len()
        );
        let (evidence, findings) = log.finish();
        Verdict {
            checker: self.name().into(),
            validity,
            summary,
            evidence,
            findings,
            counts: VerdictCounts::new(LostUpdateCounts {
                lost_updates: lost_total,
                accepted_writes: writes_total,
            }),
        }
    }
}

/// The read of `write`'s client that the write followed (its last accepted read of the key
/// before it).
fn read_before(events: &Events, r: &RegisterTrail, write: usize) -> Option<usize> {
    let (c, t) = (events.at(write).client(), events.at(write).t_us());
    r.reads
        .iter()
        .copied()
        .rev()
        .find(|&i| events.at(i).client() == c && events.at(i).t_us() <= t)
}

/// A register in a sentence: `key k`, or `key k slot 2`.
fn register_text(key: &str, slot: Option<u64>) -> String {
    match slot {
        Some(n) => format!("key {key} slot {n}"),
        None => format!("key {key}"),
    }
}

/// The evidence of two accepted writes of one value to `register` (its words).
fn same_value(
    history: &History,
    register: &str,
    r: &RegisterTrail,
    earlier: usize,
    later: usize,
) -> Evidence {
    let events = &history.events;
    let (a, b) = (events.at(earlier), events.at(later));
    let who = |e: &EventRef| {
        e.client()
            .map_or("the nemesis".into(), |c| format!("client {c}"))
    };
    let v = b.value().unwrap_or_default();
    let mut reads = Vec::new();
    let mut read_text = |w: usize| {
        read_before(events, r, w).map_or(String::new(), |i| {
            reads.push(i);
            format!(
                " after reading {} at {} µs",
                events.at(i).value().unwrap_or_default(),
                events.at(i).t_us()
            )
        })
    };
    let (ra, rb) = (read_text(earlier), read_text(later));
    let mut ev = Evidence::new(
        SafetyVerdict::Unsafe,
        SAME_VALUE,
        format!(
            "{register}: {} ({}) wrote {v} at {} µs{ra} and {} ({}) wrote {v} again at {} µs{rb}: one of the two increments was lost",
            who(&a),
            token_text(a.token()),
            a.t_us(),
            who(&b),
            token_text(b.token()),
            b.t_us()
        ),
    )
    .token(a.token())
    .token(b.token())
    .at([a.t_us(), b.t_us()])
    .events(history, [earlier, later])
    .events(history, reads);
    ev.clients.extend(a.client().into_iter().chain(b.client()));
    ev
}

#[cfg(test)]
mod tests;
