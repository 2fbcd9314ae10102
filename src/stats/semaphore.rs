//! A semaphore's occupancy (`summary.json`'s `semaphore`): how full it was on average, the most
//! holders at once, and what waking its waiters cost per grant.

use rustc_hash::FxHashSet as HashSet;

use super::measured_window;
use super::occupancy::{Hold, occupancy};
use crate::history::{Events, Op, Section};
use crate::results::{CellInfo, SemaphoreFigures};

/// The semaphore's figures over the measured window of `cell` (`cell.lock`'s permits), from
/// the history's events and critical sections ([`Events::sections`]). `wakeups_per_grant` is
/// the summary's `wakeups_per_acquisition`: the same count, kept absent where it is.
pub fn figures(
    events: &Events,
    sections: &[Section],
    cell: &CellInfo,
    wakeups_per_grant: Option<f64>,
) -> SemaphoreFigures {
    let window = measured_window(events, cell);
    let keys: HashSet<&str> = events
        .iter()
        .filter(|e| e.op() == Op::Acquire && e.client().is_some())
        .map(|e| e.key())
        .collect();
    let holds = sections.iter().map(|s| Hold {
        key: s.key(events),
        from_us: s.acquired_us(events),
        to_us: s.released_us(events).unwrap_or(window.1),
    });
    let held = occupancy(holds, keys.len(), window);
    let permits = cell.lock.permits();
    SemaphoreFigures {
        permits,
        utilisation: held.mean / f64::from(permits.max(1)),
        holders_max: held.max,
        wakeups_per_grant,
    }
}
