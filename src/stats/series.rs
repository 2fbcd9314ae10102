//! Per-second series: every second of the measured window is present, so an outage shows as
//! zero throughput instead of a gap in the line.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::latency::{new_histogram, record};
use crate::results::SecondStats;

/// Collects per-second acquisitions and latencies, then fills the gaps.
#[derive(Debug, Default)]
pub struct SeriesBuilder {
    seconds: BTreeMap<u64, (Histogram<u64>, u64)>,
}

impl SeriesBuilder {
    fn slot(&mut self, t_us: u64) -> &mut (Histogram<u64>, u64) {
        self.seconds
            .entry(t_us / 1_000_000)
            .or_insert_with(|| (new_histogram(), 0))
    }

    /// An acquisition granted at `t_us` after waiting `latency_us`.
    pub fn acquired(&mut self, t_us: u64, latency_us: u64) {
        record(&mut self.slot(t_us).0, latency_us);
    }

    /// An acquisition that failed (or ended unknown) at `t_us`.
    pub fn failed(&mut self, t_us: u64) {
        self.slot(t_us).1 += 1;
    }

    /// The series from the second holding `from_us` to the one holding the last microsecond
    /// before `end_us`, one entry per second, empty seconds as zeros.
    pub fn finish(self, from_us: u64, end_us: u64) -> Vec<SecondStats> {
        let first = from_us / 1_000_000;
        let last = end_us.saturating_sub(1).max(from_us) / 1_000_000;
        (first..=last)
            .map(|second| match self.seconds.get(&second) {
                Some((h, failures)) => SecondStats {
                    second,
                    acquisitions: h.len(),
                    p50_acquire_us: if h.is_empty() {
                        0
                    } else {
                        h.value_at_quantile(0.5)
                    },
                    p99_acquire_us: if h.is_empty() {
                        0
                    } else {
                        h.value_at_quantile(0.99)
                    },
                    failures: *failures,
                },
                None => SecondStats {
                    second,
                    acquisitions: 0,
                    p50_acquire_us: 0,
                    p99_acquire_us: 0,
                    failures: 0,
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_three_second_gap_shows_as_three_zeros() {
        let mut b = SeriesBuilder::default();
        b.acquired(500_000, 100);
        b.acquired(900_000, 300);
        b.failed(3_200_000); // inside the gap: no grant, one failure
        b.acquired(4_100_000, 200);
        let s = b.finish(0, 5_000_000);
        let counts: Vec<u64> = s.iter().map(|x| x.acquisitions).collect();
        assert_eq!(counts, [2, 0, 0, 0, 1]);
        assert_eq!(
            s.iter().map(|x| x.second).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        assert_eq!((s[0].p50_acquire_us, s[0].p99_acquire_us), (100, 300));
        assert_eq!((s[2].p50_acquire_us, s[3].failures), (0, 1));
    }

    #[test]
    fn trailing_outage_extends_to_the_end() {
        let mut b = SeriesBuilder::default();
        b.acquired(2_000_000, 10);
        let s = b.finish(2_000_000, 6_000_001);
        assert_eq!(
            s.iter().map(|x| x.acquisitions).collect::<Vec<_>>(),
            [1, 0, 0, 0, 0]
        );
    }
}
