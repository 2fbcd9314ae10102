//! Fencing: per key, the fencing tokens of grants (acquire `ok`, in time order) must strictly
//! increase; a token at or below the previous grant's is a regression (a violation: a fenced
//! resource would refuse the newer holder, or accept the older). Grants without a token are
//! skipped. Accesses the fenced register refused (`read`/`write` `fail`, `error_kind` `stale`)
//! are counted as notes: fencing kept a stale holder's access off the data, which is not a
//! violation by itself (the mutex checker judges the overlap that made the holder stale).
//!
//! The kinds that share the lock: a read-write lock's readers hold together and may be granted
//! out of token order, so a reader's grant is held only to exceed the last exclusive grant's
//! token, and an exclusive (writer's) grant the previous grant's of any mode. A semaphore's N
//! holders are granted in no token order at all: its grants are counted, never ordered.

use std::collections::HashMap;

use super::{
    Checker, Counts, Evidence, EvidenceLog, History, Safety, SafetyVerdict, Verdict, VerdictCounts,
};
use crate::history::{ErrorKind, EventKind, Mode, Op, in_time_order};
use crate::results::CellInfo;
use crate::workload::LockKind;

/// The checker's name, its verdict's `checker`.
pub const NAME: &str = "fencing";
/// Count and class: grants whose token did not exceed the previous grant's on the key.
pub const TOKEN_REGRESSIONS: &str = "token_regressions";
/// Count and class: accesses the fenced register refused for a stale token.
pub const STALE_ACCESSES_REJECTED: &str = "stale_accesses_rejected";
/// Count: grants with a token.
pub const FENCED_GRANTS: &str = "fenced_grants";

/// The fencing checker.
pub struct Fencing;

/// The fencing checker's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FencingCounts {
    /// [`TOKEN_REGRESSIONS`]: the cell's `safety.token_regressions`.
    pub token_regressions: u64,
    /// [`STALE_ACCESSES_REJECTED`]: the cell's `safety.stale_accesses_rejected`.
    pub stale_accesses_rejected: u64,
    /// [`FENCED_GRANTS`] (in the verdict only).
    pub fenced_grants: u64,
}

impl Counts for FencingCounts {
    fn add_to(&self, safety: &mut Safety) {
        safety.token_regressions = self.token_regressions;
        safety.stale_accesses_rejected = self.stale_accesses_rejected;
    }

    fn named(&self) -> Vec<(&'static str, u64)> {
        vec![
            (TOKEN_REGRESSIONS, self.token_regressions),
            (STALE_ACCESSES_REJECTED, self.stale_accesses_rejected),
            (FENCED_GRANTS, self.fenced_grants),
        ]
    }
}

impl Checker for Fencing {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&self, history: &History, cell: &CellInfo) -> Verdict {
        let events = &history.events;
        let ordered = !matches!(cell.lock, LockKind::Semaphore { .. });
        // Per key: the previous grant with a token (and the previous exclusive one, which a
        // reader's must exceed), and the accepted access with the highest token (what the
        // fenced register had seen).
        let mut last_grant: HashMap<&str, usize> = HashMap::new();
        let mut last_exclusive: HashMap<&str, usize> = HashMap::new();
        let mut highest: HashMap<&str, usize> = HashMap::new();
        let (mut grants, mut regressions, mut stale) = (0u64, 0u64, 0u64);
        let mut log = EvidenceLog::default();
        for i in in_time_order(events) {
            let e = events.at(i);
            let Some(client) = e.client() else { continue };
            let key = e.key();
            match (e.op(), e.kind()) {
                (Op::Acquire, EventKind::Ok) => {
                    let Some(token) = e.token() else { continue };
                    grants += 1;
                    let reads = Mode::is_read(e.mode());
                    let against = if reads { &last_exclusive } else { &last_grant };
                    if let Some(&p) = against.get(key).filter(|_| ordered) {
                        let prev = events.at(p);
                        let before = prev.token().unwrap_or_default();
                        if token <= before {
                            regressions += 1;
                            let how = if token == before {
                                "repeated"
                            } else {
                                "went back below"
                            };
                            let ev = Evidence::new(
                                SafetyVerdict::Unsafe,
                                TOKEN_REGRESSIONS,
                                format!(
                                    "key {key}: client {client} was granted token {token} at {} µs, which {how} client {}'s token {before} granted at {} µs: fencing tokens must increase",
                                    e.t_us(),
                                    prev.client().unwrap_or_default(),
                                    prev.t_us()
                                ),
                            )
                            .key(key)
                            .client(prev.client().unwrap_or_default())
                            .client(client)
                            .token(Some(before))
                            .token(Some(token))
                            .at([prev.t_us(), e.t_us()])
                            .events(history, [p, i]);
                            log.push(e.t_us(), ev);
                        }
                    }
                    last_grant.insert(key, i);
                    if !reads {
                        last_exclusive.insert(key, i);
                    }
                }
                (Op::Read | Op::Write, EventKind::Ok) => {
                    if let Some(t) = e.token()
                        && highest
                            .get(key)
                            .is_none_or(|&h| events.at(h).token().is_none_or(|ht| t > ht))
                    {
                        highest.insert(key, i);
                    }
                }
                (Op::Read | Op::Write, EventKind::Fail)
                    if e.error_kind() == Some(ErrorKind::Stale) =>
                {
                    stale += 1;
                    let access = if e.op() == Op::Read { "read" } else { "write" };
                    let value = e.value().map_or(String::new(), |v| format!(" of {v}"));
                    let mut ev = Evidence::new(SafetyVerdict::Safe, STALE_ACCESSES_REJECTED, "")
                        .key(key)
                        .client(client)
                        .token(e.token())
                        .at([e.t_us()])
                        .events(history, [i]);
                    let seen = highest.get(key).map(|&h| events.at(h));
                    let since = seen.map_or(String::new(), |h| {
                        format!(
                            " (it had accepted token {} from client {} at {} µs)",
                            h.token().unwrap_or_default(),
                            h.client().unwrap_or_default(),
                            h.t_us()
                        )
                    });
                    if let Some(h) = highest.get(key) {
                        ev = ev.events(history, [*h]);
                    }
                    ev.what = format!(
                        "key {key}: the fenced register refused client {client}'s {access}{value} with {} at {} µs{since}: fencing kept a stale holder off the data",
                        super::evidence::token_text(e.token()),
                        e.t_us()
                    );
                    log.push(e.t_us(), ev);
                }
                _ => {}
            }
        }

        let validity = if regressions > 0 {
            SafetyVerdict::Unsafe
        } else {
            SafetyVerdict::Safe
        };
        let summary = format!(
            "{regressions} token regressions over {grants} fenced grants; {stale} stale accesses refused by the fenced register (fencing saved the data; not a violation by itself)"
        );
        let (evidence, findings) = log.finish();
        Verdict {
            checker: self.name().into(),
            validity,
            summary,
            evidence,
            findings,
            counts: VerdictCounts::new(FencingCounts {
                token_regressions: regressions,
                stale_accesses_rejected: stale,
                fenced_grants: grants,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
