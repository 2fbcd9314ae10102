//! A reentrant lock's re-entries, apart from its acquisitions: a re-entry is an acquire by a
//! client that already holds the key (`depth` above 1 on its events), which the recipe answers
//! without the server, so counting it with the outer acquisitions would flatter their figures.
//! [`super::analyze`] reads the history without them; this reads them alone.

use crate::history::{EventKind, Events, Op};
use crate::results::{LatencySummary, ReentryCost};

use super::{new_histogram, record};

/// Whether an event belongs to a re-entry (or to the release of one).
pub fn is_reentry(depth: Option<u64>) -> bool {
    depth.is_some_and(|d| d > 1)
}

/// The re-entries' cost over the measured window (from `warmup_us`), `None` when the history
/// has none.
pub fn cost(events: &Events, warmup_us: u64) -> Option<ReentryCost> {
    let mut latency = new_histogram();
    let (mut seen, mut refused, mut requests) = (false, 0, 0);
    for op in events.operations().ops {
        let invoke = events.at(op.invoke);
        if op.op != Op::Acquire || !is_reentry(invoke.depth()) {
            continue;
        }
        seen = true;
        let Some(out) = op.outcome.map(|i| events.at(i)) else {
            continue;
        };
        if invoke.t_us() < warmup_us {
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
