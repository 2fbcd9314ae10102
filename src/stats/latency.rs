//! Latency histograms (HdrHistogram, microseconds, 3 significant digits), their percentile
//! summary and the standard `.hgrm` percentile-distribution text.

use std::io::{self, Write};
use std::path::Path;

use hdrhistogram::Histogram;

pub use crate::results::LatencySummary;

/// Significant decimal digits every histogram keeps: 0.1% value resolution.
pub const SIGFIG: u8 = 3;

/// An empty auto-resizing histogram of microseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("3 significant digits is a valid HdrHistogram precision")
}

/// Records `value_us`, growing the histogram as needed (`saturating_record` would clamp to the
/// initial bound instead); only a value beyond what a u64 histogram can track is clamped.
pub fn record(h: &mut Histogram<u64>, value_us: u64) {
    if h.record(value_us).is_err() {
        h.saturating_record(value_us);
    }
}

impl LatencySummary {
    /// Reads the percentiles off a histogram.
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        }
    }
}

/// Writes `h` (microseconds) as HdrHistogram's percentile-distribution text, in milliseconds
/// (the unit HdrHistogram's plotter labels), five ticks per half distance as its tools do.
pub fn write_hgrm<W: Write>(h: &Histogram<u64>, out: &mut W) -> io::Result<()> {
    const SCALE: f64 = 1000.0; // µs → ms
    let d = SIGFIG as usize;
    writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let mut total = 0u64;
    for v in h.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let value = v.value_iterated_to() as f64 / SCALE;
        let q = v.quantile_iterated_to();
        if q < 1.0 {
            writeln!(
                out,
                "{value:>12.d$} {q:>2.12} {total:>10} {:>14.2}",
                1.0 / (1.0 - q)
            )?;
        } else {
            // 1/(1-1) is infinite: the last line has no fourth column.
            writeln!(out, "{value:>12.d$} {q:>2.12} {total:>10}")?;
        }
    }
    let (mean, sd, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.mean() / SCALE, h.stdev() / SCALE, h.max() as f64 / SCALE)
    };
    writeln!(
        out,
        "#[Mean    = {mean:>12.d$}, StdDeviation   = {sd:>12.d$}]"
    )?;
    writeln!(
        out,
        "#[Max     = {max:>12.d$}, Total count    = {:>12}]",
        h.len()
    )?;
    // HdrHistogram's sub-bucket count: the power of two covering 2 × 10^sigfig.
    let sub_buckets = (2 * 10u64.pow(u32::from(SIGFIG))).next_power_of_two();
    writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_buckets
    )
}

/// Writes the `.hgrm` text to `path` (e.g. `acquire.hgrm`).
pub fn write_hgrm_file(h: &Histogram<u64>, path: &Path) -> io::Result<()> {
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    write_hgrm(h, &mut out)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reads_percentiles() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let s = LatencySummary::of(&h);
        assert_eq!(
            (s.count, s.p50, s.p90, s.p99, s.p999, s.max),
            (1000, 500, 900, 990, 999, 1000)
        );
        assert!((s.mean - 500.5).abs() < 0.5);
        assert_eq!(
            LatencySummary::of(&new_histogram()),
            LatencySummary::default()
        );
    }

    #[test]
    fn hgrm_has_the_standard_layout() {
        let mut h = new_histogram();
        for v in 1..=100u64 {
            h.record(v * 1000).unwrap(); // 1..=100 ms
        }
        let mut buf = Vec::new();
        write_hgrm(&h, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "       Value     Percentile TotalCount 1/(1-Percentile)"
        );
        assert_eq!(lines[1], "");
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first, ["1.000", "0.000000000000", "1", "1.00"]);
        let median = lines
            .iter()
            .find(|l| l.contains(" 0.500000000000 "))
            .expect("a 50% line");
        let cols: Vec<&str> = median.split_whitespace().collect();
        assert_eq!((cols[0], cols[2], cols[3]), ("50.015", "50", "2.00"));
        let last: Vec<&str> = lines
            .iter()
            .rev()
            .nth(3)
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(last, ["100.031", "1.000000000000", "100"]);
        assert!(
            text.contains("#[Max     =      100.031, Total count    =          100]"),
            "{text}"
        );
        assert!(text.ends_with("SubBuckets     =         2048]\n"), "{text}");
    }
}
