//! A reentrant lock's re-entries, apart from its acquisitions: a re-entry is an acquire by a
//! client that already holds the key (`depth` above 1 on its events), which the recipe answers
//! without the server, so counting it with the outer acquisitions would flatter their figures.
//! [`super::analyze`] reads the history without them; this reads them alone.

use rustc_hash::FxHashMap as HashMap;

use crate::history::{EventKind, Events, Op};
use crate::results::{LatencySummary, ReentryCost};

use super::{new_histogram, record};

/// Whether an event belongs to a re-entry (or to the release of one).
pub fn is_reentry(depth: Option<u64>) -> bool {
    depth.is_some_and(|d| d > 1)
}

/// The re-entries' cost over the measured window, `None` when the history has none. A
/// re-entry counts when its outer acquisition does (it started at or after `warmup_us`), so
/// the count is the outer acquisitions' times the re-entries each made.
pub fn cost(events: &Events, warmup_us: u64) -> Option<ReentryCost> {
    let mut latency = new_histogram();
    let (mut seen, mut refused, mut requests) = (false, 0, 0);
    // Per client, whether its latest outer acquisition counts (a client holds one key at a
    // time, and its re-entries follow its outer grant).
    let mut outer_counts: HashMap<u32, bool> = HashMap::default();
    for op in events.operations().ops {
        let (Some(client), Op::Acquire) = (op.process.client(), op.op) else {
            continue;
        };
        let invoke = events.at(op.invoke);
        if !is_reentry(invoke.depth()) {
            let start = invoke.intended_us().unwrap_or(invoke.t_us());
            outer_counts.insert(client, start >= warmup_us);
            continue;
        }
        seen = true;
        let Some(out) = op.outcome.map(|i| events.at(i)) else {
            continue;
        };
        if !outer_counts.get(&client).copied().unwrap_or(false) {
            continue;
        }
        if out.kind() == EventKind::Ok {
            record(&mut latency, out.t_us().saturating_sub(invoke.t_us()));
            requests += out.requests().unwrap_or(0);
        } else {
            refused += 1;
        }
    }
    seen.then(|| ReentryCost {
        reentries: latency.len(),
        refused,
        requests,
        latency_us: LatencySummary::of(&latency),
    })
}
