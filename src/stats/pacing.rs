//! Was the workload run as written? The hold and think times the clients asked for (recorded
//! on the events as `hold_us` and `think_us`) beside the ones the history shows, and how late
//! open-loop acquisitions started after their intended start.

use rustc_hash::FxHashMap as HashMap;

use hdrhistogram::Histogram;

use super::latency::{LatencySummary, new_histogram, record};
use crate::history::EventRef;

/// Folds the pacing figures from a history, fed in time order by `analyze`.
#[derive(Debug)]
pub struct Pacing {
    hold_requested: Histogram<u64>,
    think_requested: Histogram<u64>,
    think_measured: Histogram<u64>,
    arrival_lag: Histogram<u64>,
    /// Client → time of its latest acquire or release outcome, where its think time starts.
    last_outcome: HashMap<crate::history::Process, u64>,
}

impl Default for Pacing {
    fn default() -> Pacing {
        Pacing {
            hold_requested: new_histogram(),
            think_requested: new_histogram(),
            think_measured: new_histogram(),
            arrival_lag: new_histogram(),
            last_outcome: HashMap::default(),
        }
    }
}

/// The four summaries for `CellSummary`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PacingSummary {
    /// Sampled hold times (release `invoke`'s `hold_us`).
    pub hold_requested: LatencySummary,
    /// Sampled think times (acquire `invoke`'s `think_us`).
    pub think_requested: LatencySummary,
    /// The client's previous outcome → its acquire invoke, where `think_us` was recorded.
    pub think_measured: LatencySummary,
    /// Open loop: acquire invoke − intended start.
    pub arrival_lag: LatencySummary,
}

impl Pacing {
    /// An acquire `invoke`: its think time (requested and measured) and its arrival lag, each
    /// counted when the operation starts at or after `warmup_us`, as `analyze` counts latency.
    pub fn acquire_invoke(&mut self, e: &EventRef, warmup_us: u64) {
        if let Some(intended) = e.intended_us()
            && intended >= warmup_us
        {
            record(&mut self.arrival_lag, e.t_us().saturating_sub(intended));
        }
        if let Some(think) = e.think_us()
            && e.t_us() >= warmup_us
            && let Some(&since) = self.last_outcome.get(&e.process())
        {
            record(&mut self.think_requested, think);
            record(&mut self.think_measured, e.t_us().saturating_sub(since));
        }
    }

    /// A release `invoke` whose measured hold `analyze` counted: the hold it asked for.
    pub fn hold_counted(&mut self, release_invoke: &EventRef) {
        if let Some(hold) = release_invoke.hold_us() {
            record(&mut self.hold_requested, hold);
        }
    }

    /// An acquire or release outcome (`ok`, `fail` or `info`): the client's think starts here.
    pub fn outcome(&mut self, e: &EventRef) {
        self.last_outcome.insert(e.process(), e.t_us());
    }

    /// The summaries.
    pub fn summary(&self) -> PacingSummary {
        PacingSummary {
            hold_requested: LatencySummary::of(&self.hold_requested),
            think_requested: LatencySummary::of(&self.think_requested),
            think_measured: LatencySummary::of(&self.think_measured),
            arrival_lag: LatencySummary::of(&self.arrival_lag),
        }
    }
}
