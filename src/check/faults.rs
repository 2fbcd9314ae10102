//! Fault windows: what happened to the lock while each nemesis fault was in effect (the
//! `faults` field of a cell's summary, one entry per window).
//!
//! **Windows.** Each nemesis `fault` `invoke` starts a window; it is paired with the next end
//! (`ok`, `info` or `fail`, in time order) of the same fault kind and targets, first in first
//! out, so overlapping windows of different kinds pair right. An `ok` ends it (the heal). An
//! end whose `error` starts with `start:` is a fault that never started (`started: false`); it
//! ends there, unless the undo of its half-start failed too (`...; heal: ...`). Any other
//! `info`/`fail` end is a heal that failed: the fault may still be in effect, so the window
//! has no end (`end_us` null) and runs to the end of the history, like a start with no end at
//! all.
//!
//! **When it took effect.** The `invoke` is when the nemesis asked for the fault; its end
//! event carries `effect_us`, when the start completed (the node killed, the rules in place),
//! and `undo_us`, when the undo was asked for; the end event itself is when the undo completed
//! (for a kill: when the restarted node serves its cluster again). `applying_ms` and
//! `undoing_ms` are those two spans. Histories from before these fields fall back to the
//! `invoke` as the effect.
//!
//! **Figures of the window itself**, over `[effect_us, end_us]` (the end of the history when
//! open): `acquisitions` granted inside it; `first_grant_ms`, the effect → the first acquire
//! `ok` at or after it (any key); `recovery_ms`, the end → the first acquire `ok` at or after it,
//! split as far as the history shows it into the cluster's share (`recovery_cluster_ms`: the
//! end → the first outcome only the cluster could have given, an acquire or release `ok` or an
//! acquisition `withdrawn`, which the server confirmed) and the clients' share
//! (`recovery_clients_ms`: from there to the first grant: what the recipes left behind and the
//! clients' own backoff); `requests_per_client_s`, the requests of the acquisitions, each
//! spread evenly over its invoke → outcome, that fall inside the window, per client and second
//! (a retry storm against a leaderless cluster shows here); `most_failed_per_client`, the most
//! acquire outcomes `fail` or `info` one client had inside it.
//!
//! **Attribution.** A lease granted before the heal may only end, and show what the fault did,
//! up to its TTL later, so the checkers' findings, lost leases and failed outcomes are
//! attributed over a longer span: `[start_us, end_us + settle]`, where settle is 2 × the
//! longest `ttl_ms` of any acquire `ok` in the cell, and at least 1 s (windows without an end
//! run to the end of the history). A finding belongs to **every** window whose span contains
//! the moment it happened (its checker's time for it: for an overlap, the moment both
//! certainly held; for a lost update, the second write of one value; for a token regression,
//! the regressing grant; for a stale access, the refused access), so overlapping windows, or a
//! window starting within the settle of another, may count the same finding twice. Counts are
//! complete (they come from [`Verdict::findings`], not from the first evidence kept).

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::{History, SafetyVerdict, Verdict};
use super::{fencing, lost_update, mutex, reentrant, rwlock, semaphore};
use crate::history::{ErrorKind, EventKind, EventRef, Events, Op, TIMEOUT_ERROR, in_time_order};
use crate::results::{CellInfo, FaultWindow};

/// The shortest settle after a heal, µs: findings up to this long after it are still the
/// fault's, whatever the leases' TTLs.
pub const MIN_SETTLE_US: u64 = 1_000_000;

/// The error text that marks a fault that failed to start (the nemesis writes `start: ...`).
pub const START_FAILED: &str = "start:";

/// What the modelled clock fault does, in the few words a plot label or a report's sentence
/// has room for; the window's `effect` carries the whole description.
pub const CLOCK_MODEL: &str = "modelled: TTLs and deadlines cut, no clock changed";

impl FaultWindow {
    /// The window's kind as reports and plots name it: whether it started, and for the clock
    /// fault that it is a model and what the model does ([`CLOCK_MODEL`]), so no place shows a
    /// modelled jump as a real one.
    pub fn kind_label(&self) -> String {
        if !self.started {
            format!("{} (did not start)", self.kind)
        } else if self
            .effect
            .as_deref()
            .is_some_and(|e| e.starts_with("partial:"))
        {
            format!("{} (partial, {CLOCK_MODEL})", self.kind)
        } else if self.kind == "clock" {
            format!("{} ({CLOCK_MODEL})", self.kind)
        } else {
            self.kind.clone()
        }
    }
}

/// A window as paired from the history, before its figures.
#[derive(Debug, Clone, PartialEq)]
struct Paired {
    kind: String,
    targets: Vec<String>,
    start_us: u64,
    end_us: Option<u64>,
    started: bool,
    error: Option<String>,
    effect_us: Option<u64>,
    undo_us: Option<u64>,
    effect: Option<String>,
}

/// Pairs each fault `invoke` with the next end of the same kind and targets (FIFO).
fn pair(events: &Events) -> Vec<Paired> {
    let mut out: Vec<Paired> = Vec::new();
    let mut open: HashMap<(&str, &[String]), VecDeque<usize>> = HashMap::new();
    for i in in_time_order(events) {
        let e = events.at(i);
        if e.op() != Op::Fault {
            continue;
        }
        let kind = crate::history::fault_kind(e.fault().unwrap_or_default());
        let targets = e.targets().unwrap_or_default();
        if e.kind() == EventKind::Invoke {
            open.entry((kind, targets))
                .or_default()
                .push_back(out.len());
            out.push(Paired {
                kind: kind.to_string(),
                targets: targets.to_vec(),
                start_us: e.t_us(),
                end_us: None,
                started: true,
                error: None,
                effect_us: None,
                undo_us: None,
                effect: None,
            });
            continue;
        }
        // An end with no open start (a damaged history) ends nothing.
        let Some(w) = open.get_mut(&(kind, targets)).and_then(VecDeque::pop_front) else {
            continue;
        };
        let w = &mut out[w];
        w.error = e.error().map(str::to_string);
        w.effect_us = e.effect_us();
        w.undo_us = e.undo_us();
        w.effect = e.effect().map(str::to_string);
        let text = e.error().unwrap_or_default();
        if e.kind() == EventKind::Ok {
            w.end_us = Some(e.t_us());
        } else if text.starts_with(START_FAILED) {
            w.started = false;
            // Undoing the half-start failed as well: it may still be in effect.
            if !text.contains("heal:") {
                w.end_us = Some(e.t_us());
            }
        }
    }
    out
}

/// 2 × the longest lease TTL granted in the cell, at least [`MIN_SETTLE_US`], µs.
pub fn settle_us(events: &Events) -> u64 {
    let longest_ms = events
        .iter()
        .filter(|e| e.op() == Op::Acquire && e.kind() == EventKind::Ok)
        .filter_map(|e| e.ttl_ms())
        .max()
        .unwrap_or(0);
    longest_ms.saturating_mul(2_000).max(MIN_SETTLE_US)
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The first time in `sorted` at or after `t`.
fn first_at_or_after(sorted: &[u64], t: u64) -> Option<u64> {
    let i = sorted.partition_point(|&g| g < t);
    sorted.get(i).copied()
}

/// The fault windows of `history` in start order, each with its figures, the findings of
/// `verdicts` (the cell's checkers' verdicts on the same history) attributed as the module doc
/// says. No fault events give no windows.
pub fn fault_windows(history: &History, cell: &CellInfo, verdicts: &[Verdict]) -> Vec<FaultWindow> {
    let events = &history.events;
    let paired = pair(events);
    if paired.is_empty() {
        return Vec::new();
    }
    let end = history.end_us(cell);
    let settle = settle_us(events);
    let mut grants: Vec<u64> = events
        .iter()
        .filter(|e| e.op() == Op::Acquire && e.kind() == EventKind::Ok && e.client().is_some())
        .map(|e| e.t_us())
        .collect();
    grants.sort_unstable();
    let answers = cluster_answers(events);
    let attempts = attempts(events);
    // The events a window counts, in time order, so each window reads only its own span.
    let mut counted: Vec<EventRef> = events
        .iter()
        .filter(|e| e.client().is_some() && counts_in_window(e))
        .collect();
    counted.sort_by_key(|e| e.t_us());

    paired
        .into_iter()
        .map(|p| {
            let from = p.effect_us.unwrap_or(p.start_us).max(p.start_us);
            let inside_to = p.end_us.unwrap_or(end).max(from);
            let span = (
                p.start_us,
                p.end_us
                    .map_or(end, |e| e.saturating_add(settle))
                    .max(p.start_us),
            );
            let acquisitions = (grants.partition_point(|&g| g <= inside_to)
                - grants.partition_point(|&g| g < from)) as u64;
            let recovery = p
                .end_us
                .and_then(|e| first_at_or_after(&grants, e).map(|g| g - e));
            let cluster = p
                .end_us
                .zip(recovery)
                .and_then(|(e, r)| first_at_or_after(&answers, e).map(|a| (a - e).min(r)));
            let load = load(&attempts, (from, inside_to), cell.id.clients);
            let mut w = FaultWindow {
                recovery_cluster_ms: cluster.map(ms),
                recovery_clients_ms: recovery.zip(cluster).map(|(r, c)| ms(r - c)),
                requests_per_client_s: load.0,
                most_failed_per_client: load.1,
                first_grant_ms: first_at_or_after(&grants, from).map(|g| ms(g - from)),
                effect_us: p.effect_us,
                undo_us: p.undo_us,
                effect: p.effect,
                applying_ms: p.effect_us.map(|e| ms(e.saturating_sub(p.start_us))),
                undoing_ms: p
                    .undo_us
                    .zip(p.end_us)
                    .map(|(u, e)| ms(e.saturating_sub(u))),
                recovery_ms: recovery.map(ms),
                kind: p.kind,
                targets: p.targets,
                start_us: p.start_us,
                end_us: p.end_us,
                started: p.started,
                error: p.error,
                acquisitions,
                verdict: SafetyVerdict::Safe,
                overlaps: 0,
                possible_overlaps: 0,
                lost_updates: 0,
                stale_accesses_rejected: 0,
                token_regressions: 0,
                lost_leases: 0,
                errors: BTreeMap::new(),
            };
            attribute_findings(&mut w, verdicts, span);
            attribute_events(&mut w, &counted, span);
            w
        })
        .collect()
}

/// When the cluster answered a client, in time order: acquire and release `ok`s, and
/// acquisitions `withdrawn` (the server confirmed the give-back).
fn cluster_answers(events: &Events) -> Vec<u64> {
    let mut at: Vec<u64> = events
        .iter()
        .filter(|e| e.client().is_some() && matches!(e.op(), Op::Acquire | Op::Release))
        .filter(|e| e.kind() == EventKind::Ok || e.error_kind() == Some(ErrorKind::Withdrawn))
        .map(|e| e.t_us())
        .collect();
    at.sort_unstable();
    at
}

/// One acquisition's life: client, invoke, outcome, requests, and whether it failed.
struct Attempt {
    client: u32,
    from_us: u64,
    to_us: u64,
    requests: u64,
    failed: bool,
}

/// Every acquisition with an outcome, paired by client (a client has one acquisition in
/// flight at a time).
fn attempts(events: &Events) -> Vec<Attempt> {
    let mut invoked: HashMap<u32, u64> = HashMap::new();
    let mut out = Vec::new();
    for e in in_time_order(events).map(|i| events.at(i)) {
        let (Some(client), Op::Acquire) = (e.client(), e.op()) else {
            continue;
        };
        if e.kind() == EventKind::Invoke {
            invoked.insert(client, e.t_us());
        } else if let Some(from_us) = invoked.remove(&client) {
            out.push(Attempt {
                client,
                from_us,
                to_us: e.t_us(),
                requests: e.requests().unwrap_or(0),
                failed: matches!(e.kind(), EventKind::Fail | EventKind::Info),
            });
        }
    }
    out
}

/// Requests per client and second inside `span` (each attempt's spread evenly over its
/// life), and the most failed attempts of one client ending inside it.
fn load(attempts: &[Attempt], span: (u64, u64), clients: u32) -> (Option<f64>, u64) {
    let (from, to) = span;
    let mut requests = 0.0;
    let mut failed: HashMap<u32, u64> = HashMap::new();
    for a in attempts {
        let inside = a.to_us.min(to).saturating_sub(a.from_us.max(from));
        let life = a.to_us.saturating_sub(a.from_us).max(1);
        requests += a.requests as f64 * inside.min(life) as f64 / life as f64;
        if a.failed && (from..=to).contains(&a.to_us) {
            *failed.entry(a.client).or_default() += 1;
        }
    }
    let seconds = (to - from) as f64 / 1e6;
    let rate = (seconds > 0.0 && clients > 0).then(|| requests / f64::from(clients) / seconds);
    (rate, failed.into_values().max().unwrap_or(0))
}

/// The items of `sorted` (in time order by `t`) inside `span` (both ends included).
fn inside<T>(sorted: &[T], span: (u64, u64), t: impl Fn(&T) -> u64) -> &[T] {
    let from = sorted.partition_point(|x| t(x) < span.0);
    let to = sorted.partition_point(|x| t(x) <= span.1).max(from);
    &sorted[from..to]
}

/// Counts the findings of `verdicts` (each verdict's in time order) that happened inside the
/// window's `span`, and merges their validity into its verdict.
fn attribute_findings(w: &mut FaultWindow, verdicts: &[Verdict], span: (u64, u64)) {
    let (mut violation, mut possible) = (false, false);
    for v in verdicts {
        for f in inside(&v.findings, span, |f| f.t_us) {
            violation |= f.validity == SafetyVerdict::Unsafe;
            possible |= f.validity == SafetyVerdict::Unknown;
            let class = f.class.as_deref().unwrap_or_default();
            // The exclusion checkers of every kind of lock: overlaps (a reentrant lock's release
            // by a non-holder is none), and a semaphore's holders beyond its permits.
            let exclusion = matches!(
                v.checker.as_str(),
                mutex::NAME | rwlock::NAME | semaphore::NAME
            ) || (v.checker == reentrant::NAME
                && class != reentrant::RELEASE_BY_NON_HOLDER
                && class != reentrant::POSSIBLE_RELEASE_BY_NON_HOLDER);
            let counter = match (exclusion, v.checker.as_str(), f.validity) {
                (true, _, SafetyVerdict::Unsafe) => &mut w.overlaps,
                (true, _, SafetyVerdict::Unknown) => &mut w.possible_overlaps,
                (_, lost_update::NAME, SafetyVerdict::Unsafe) => &mut w.lost_updates,
                (_, fencing::NAME, _) if class == fencing::TOKEN_REGRESSIONS => {
                    &mut w.token_regressions
                }
                (_, fencing::NAME, _) if class == fencing::STALE_ACCESSES_REJECTED => {
                    &mut w.stale_accesses_rejected
                }
                _ => continue,
            };
            *counter += 1;
        }
    }
    w.verdict = if violation {
        SafetyVerdict::Unsafe
    } else if possible {
        SafetyVerdict::Unknown
    } else {
        SafetyVerdict::Safe
    };
}

/// Whether a window counts `e`: a lost lease, or a failed acquire or release outcome.
fn counts_in_window(e: &EventRef) -> bool {
    matches!(
        (e.op(), e.kind()),
        (Op::LeaseLost, _) | (Op::Acquire | Op::Release, EventKind::Fail | EventKind::Info)
    )
}

/// Counts the lost leases and the failed acquire and release outcomes of `counted` (the
/// clients' events [`counts_in_window`] keeps, in time order) inside the window's `span`.
fn attribute_events(w: &mut FaultWindow, counted: &[EventRef], span: (u64, u64)) {
    for e in inside(counted, span, |e| e.t_us()) {
        match (e.op(), e.kind()) {
            (Op::LeaseLost, _) => w.lost_leases += 1,
            (Op::Acquire | Op::Release, EventKind::Fail | EventKind::Info) => {
                // Histories written before error kinds name timeouts by their text.
                let kind = e
                    .error_kind()
                    .or_else(|| (e.error() == Some(TIMEOUT_ERROR)).then_some(ErrorKind::Timeout));
                let name = kind.map_or("unclassified", ErrorKind::name);
                *w.errors.entry(name.to_string()).or_default() += 1;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
