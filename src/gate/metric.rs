//! The speed metrics the gate compares, each with the direction that is better and its default
//! floor: the smallest change the gate ever calls a regression.

use std::fmt;

use crate::results::CellSummary;

/// A gated speed metric of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Granted acquisitions per second (higher is better).
    Throughput,
    /// 99th percentile of acquire latency, µs (lower is better).
    AcquireP99,
    /// Median handoff latency (release invoke → the next holder's grant), µs (lower is better).
    HandoffP50,
    /// Wake-ups per granted acquisition (lower is better): the thundering herd's cost.
    WakeupsPerAcquisition,
}

impl Metric {
    /// Every gated metric, in table order.
    pub const ALL: [Metric; 4] = [
        Metric::Throughput,
        Metric::AcquireP99,
        Metric::HandoffP50,
        Metric::WakeupsPerAcquisition,
    ];

    /// The name used in baselines, tables and `--threshold NAME=PCT`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::AcquireP99 => "acquire_p99",
            Metric::HandoffP50 => "handoff_p50",
            Metric::WakeupsPerAcquisition => "wakeups_per_acquisition",
        }
    }

    /// The metric of `name`, or the names there are.
    pub fn from_name(name: &str) -> Result<Metric, String> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                format!(
                    "no metric named '{name}': the gated metrics are {}",
                    Metric::ALL.map(Metric::name).join(", ")
                )
            })
    }

    /// Whether a larger value is an improvement.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Throughput)
    }

    /// The default floor, percent: a worse change smaller than this never fails the gate
    /// (throughput −20 %, p99 +25 %, handoff p50 +25 %, wake-ups per acquisition +10 %).
    pub fn default_floor_pct(self) -> f64 {
        match self {
            Metric::Throughput => 20.0,
            Metric::AcquireP99 | Metric::HandoffP50 => 25.0,
            Metric::WakeupsPerAcquisition => 10.0,
        }
    }

    /// The metric's value in `cell`; `None` where the cell did not measure it (no grant, no
    /// handoff, a client that cannot see wake-ups).
    pub fn of(self, cell: &CellSummary) -> Option<f64> {
        match self {
            Metric::Throughput => Some(cell.throughput_per_s),
            Metric::AcquireP99 => {
                (cell.acquire_latency_us.count > 0).then_some(cell.acquire_latency_us.p99 as f64)
            }
            Metric::HandoffP50 => {
                (cell.handoff_latency_us.count > 0).then_some(cell.handoff_latency_us.p50 as f64)
            }
            Metric::WakeupsPerAcquisition => cell.wakeups_per_acquisition,
        }
    }

    /// `value` in the metric's unit, for tables.
    pub fn show(self, value: f64) -> String {
        match self {
            Metric::Throughput => format!("{value:.1}/s"),
            Metric::AcquireP99 | Metric::HandoffP50 => format!("{:.2} ms", value / 1000.0),
            Metric::WakeupsPerAcquisition => format!("{value:.2}"),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
