//! Counting exclusion: per key, at most N holders at once, N the cell's `permits`
//! (`cell.json`'s `lock`; a cell of another kind counts as N = 1).
//!
//! Holds are the [`super::mutex`] checker's bounds: a certain hold from the acquire `ok` to the
//! same client's release `invoke` (open to the end of the history if it never released), a
//! possible hold from the invoke of an acquisition that ended `info` to that outcome. A hold
//! that ends at the very microsecond another starts does not overlap it.
//!
//! [`OVER_PERMITS`]: a grant that makes more than N certain holds of the key at once: a
//! violation, its evidence every hold at that moment. [`POSSIBLE_OVER_PERMITS`]: a grant or a
//! possible hold that makes more than N only when possible holds are counted: `unknown`.

use std::collections::BTreeMap;

use super::evidence::token_text;
use super::{
    Checker, Counts, Evidence, EvidenceLog, History, Safety, SafetyVerdict, Verdict, VerdictCounts,
};
use crate::history::{EventKind, Op};
use crate::results::CellInfo;

/// The checker's name, its verdict's `checker`.
pub const NAME: &str = "semaphore";
/// Count and class: grants that made more than `permits` certain holders of a key.
pub const OVER_PERMITS: &str = "over_permits";
/// Count and class: more than `permits` holders only if unknown acquisitions were granted.
pub const POSSIBLE_OVER_PERMITS: &str = "possible_over_permits";
/// Count: the most certain holders of one key at once, in the verdict only.
pub const MAX_HOLDERS: &str = "max_holders";
/// Count: the permits the cell's semaphore had, in the verdict only.
pub const PERMITS: &str = "permits";

/// The counting-exclusion checker.
pub struct Semaphore;

/// The semaphore checker's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SemaphoreCounts {
    /// [`OVER_PERMITS`]: the cell's `safety.over_permits`.
    pub over_permits: u64,
    /// [`POSSIBLE_OVER_PERMITS`]: the cell's `safety.possible_over_permits`.
    pub possible_over_permits: u64,
    /// [`MAX_HOLDERS`].
    pub max_holders: u64,
    /// [`PERMITS`].
    pub permits: u64,
}

impl Counts for SemaphoreCounts {
    fn add_to(&self, safety: &mut Safety) {
        safety.over_permits = Some(self.over_permits);
        safety.possible_over_permits = Some(self.possible_over_permits);
    }

    fn named(&self) -> Vec<(&'static str, u64)> {
        vec![
            (OVER_PERMITS, self.over_permits),
            (POSSIBLE_OVER_PERMITS, self.possible_over_permits),
            (MAX_HOLDERS, self.max_holders),
            (PERMITS, self.permits),
        ]
    }
}

/// A hold of a key, certain or possible, by its events.
#[derive(Debug, Clone, Copy)]
struct Hold {
    client: u32,
    from_us: u64,
    to_us: u64,
    /// The grant (certain) or the invoke (possible).
    from_i: usize,
    /// The release invoke (certain) or the `info` outcome (possible); `None` if open to the end.
    to_i: Option<usize>,
    certain: bool,
}

impl Checker for Semaphore {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&self, history: &History, cell: &CellInfo) -> Verdict {
        let events = &history.events;
        let permits = u64::from(cell.lock.permits());
        let end = history.end_us(cell);
        let mut by_key: BTreeMap<&str, Vec<Hold>> = BTreeMap::new();
        for s in history.critical_sections() {
            by_key.entry(s.key(events)).or_default().push(Hold {
                client: s.client,
                from_us: s.acquired_us(events),
                to_us: s.released_us(events).unwrap_or(end),
                from_i: s.acquired_at(),
                to_i: s.released_at(),
                certain: true,
            });
        }
        for op in &history.operations().ops {
            let (Some(c), Op::Acquire, Some(out)) = (op.process.client(), op.op, op.outcome) else {
                continue;
            };
            if events.at(out).kind() == EventKind::Info {
                by_key
                    .entry(events.at(op.invoke).key())
                    .or_default()
                    .push(Hold {
                        client: c,
                        from_us: events.t_us(op.invoke),
                        to_us: events.t_us(out),
                        from_i: op.invoke,
                        to_i: Some(out),
                        certain: false,
                    });
            }
        }

        let mut counts = SemaphoreCounts {
            permits,
            ..SemaphoreCounts::default()
        };
        let mut log = EvidenceLog::default();
        let (mut holds, mut possible) = (0, 0);
        for (key, hs) in &by_key {
            holds += hs.iter().filter(|h| h.certain).count();
            possible += hs.iter().filter(|h| !h.certain).count();
            sweep(history, key, hs, permits, &mut counts, &mut log);
        }

        let validity = if counts.over_permits > 0 {
            SafetyVerdict::Unsafe
        } else if counts.possible_over_permits > 0 {
            SafetyVerdict::Unknown
        } else {
            SafetyVerdict::Safe
        };
        let summary = format!(
            "{} grants beyond {permits} permits, {} possible with unknown acquisitions; at most {} holders of one key at once; {holds} holds, {possible} unknown acquisitions",
            counts.over_permits, counts.possible_over_permits, counts.max_holders
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

/// Walks one key's holds in time order (a hold's end before another's start in the same
/// microsecond), counting the holders at each start.
fn sweep(
    history: &History,
    key: &str,
    hs: &[Hold],
    permits: u64,
    counts: &mut SemaphoreCounts,
    log: &mut EvidenceLog,
) {
    // (time, 0 for an end and 1 for a start, hold); sorted, ends come first at a tie, and
    // starts keep the order of the holds.
    let mut marks: Vec<(u64, u8, usize)> = Vec::with_capacity(hs.len() * 2);
    for (n, h) in hs.iter().enumerate() {
        marks.push((h.from_us, 1, n));
        marks.push((h.to_us, 0, n));
    }
    marks.sort_unstable_by_key(|&(t, start, n)| (t, start, hs[n].from_i, n));
    let mut open: Vec<usize> = Vec::new();
    for (t, start, n) in marks {
        if start == 0 {
            open.retain(|&o| o != n);
            continue;
        }
        open.push(n);
        let certain = open.iter().filter(|&&o| hs[o].certain).count() as u64;
        counts.max_holders = counts.max_holders.max(certain);
        let all = open.len() as u64;
        if all <= permits {
            continue;
        }
        let (validity, class) = if hs[n].certain && certain > permits {
            counts.over_permits += 1;
            (SafetyVerdict::Unsafe, OVER_PERMITS)
        } else if certain > permits {
            // An unknown acquisition started while the key was already over: the violation was
            // found at the grant that made it so.
            continue;
        } else {
            counts.possible_over_permits += 1;
            (SafetyVerdict::Unknown, POSSIBLE_OVER_PERMITS)
        };
        log.push_with(t, validity, class, || {
            evidence(history, key, hs, &open, permits, (validity, class, t))
        });
    }
}

/// The evidence of the holds `open` of `key` at `t`, over `permits`.
fn evidence(
    history: &History,
    key: &str,
    hs: &[Hold],
    open: &[usize],
    permits: u64,
    (validity, class, t): (SafetyVerdict, &str, u64),
) -> Evidence {
    let events = &history.events;
    let mut ev = Evidence::new(validity, class, "").key(key);
    let mut held = Vec::new();
    for &o in open {
        let h = hs[o];
        ev = ev
            .client(h.client)
            .events(history, [h.from_i].into_iter().chain(h.to_i))
            .at([h.from_us]);
        let until = h.to_i.map_or_else(
            || "the end".to_string(),
            |i| format!("{} µs", events.t_us(i)),
        );
        held.push(if h.certain {
            let token = events.at(h.from_i).token();
            ev = ev.token(token);
            format!(
                "client {} ({}) from {} µs to {until}",
                h.client,
                token_text(token),
                h.from_us
            )
        } else {
            format!(
                "client {}'s acquisition invoked at {} µs, ended unknown (info) at {until}",
                h.client, h.from_us
            )
        });
    }
    ev = ev.at([t]);
    let certain = open.iter().filter(|&&o| hs[o].certain).count();
    ev.what = if validity == SafetyVerdict::Unsafe {
        format!(
            "key {key}: {certain} holders at {t} µs, more than its {permits} permits: {}",
            held.join("; ")
        )
    } else {
        format!(
            "key {key}: {} holders at {t} µs, more than its {permits} permits only if the unknown acquisitions were granted: {}",
            open.len(),
            held.join("; ")
        )
    };
    ev
}

#[cfg(test)]
mod tests;
