//! A tryLock workload's (`acquire_timeout = "0s"`: one try, no wait) share of attempts granted
//! (`summary.json`'s `try_lock`): with no waiting, a busy lock shows as refusals, not latency.

use super::{measured_window, op_start_us};
use crate::history::{EventKind, Events, Op, Operations};
use crate::results::{CellInfo, TryLockFigures};

/// The attempts that started in the measured window of `cell` and how many were granted. A
/// reentrant lock's re-entries (see [`super::reentry`]) are not attempts of their own.
pub fn figures(events: &Events, ops: &Operations, cell: &CellInfo) -> TryLockFigures {
    let window = measured_window(events, cell);
    let (mut attempts, mut granted) = (0u64, 0u64);
    for op in &ops.ops {
        if op.op != Op::Acquire
            || op.process.client().is_none()
            || super::reentry::is_reentry(events.at(op.invoke).depth())
            || op_start_us(events, op) < window.0
        {
            continue;
        }
        attempts += 1;
        granted += u64::from(op.outcome_kind(events) == Some(EventKind::Ok));
    }
    TryLockFigures {
        attempts,
        granted,
        success_rate: (attempts > 0).then(|| granted as f64 / attempts as f64),
    }
}
