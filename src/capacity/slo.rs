//! The latency SLO of `lockbench capacity --slo p99=50ms`: a bound on the acquire latency's
//! 99th percentile.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A latency objective: the acquire latency's p99 must not exceed `p99_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slo {
    /// The bound on the p99 acquire latency, in microseconds (at least 1).
    pub p99_us: u64,
}

impl FromStr for Slo {
    type Err = String;

    /// Parses `p99=<duration>` (a humantime duration, e.g. `p99=50ms`, `p99=2s`); the duration
    /// must be at least 1 µs.
    fn from_str(text: &str) -> Result<Slo, String> {
        let hint = "write the SLO as p99=<duration>, e.g. --slo p99=50ms";
        let Some((metric, value)) = text.split_once('=') else {
            return Err(format!("\"{text}\" has no '=': {hint}"));
        };
        if metric.trim() != "p99" {
            return Err(format!(
                "unknown percentile \"{}\" (only p99 is supported): {hint}",
                metric.trim()
            ));
        }
        let d = humantime::parse_duration(value.trim())
            .map_err(|e| format!("\"{}\" is not a duration ({e}): {hint}", value.trim()))?;
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if us == 0 {
            return Err(format!(
                "the p99 bound must be at least 1µs, got \"{}\": {hint}",
                value.trim()
            ));
        }
        Ok(Slo { p99_us: us })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_p99_durations_and_refuses_the_rest() {
        assert_eq!("p99=50ms".parse::<Slo>(), Ok(Slo { p99_us: 50_000 }));
        assert_eq!("p99=2s".parse::<Slo>(), Ok(Slo { p99_us: 2_000_000 }));
        assert_eq!("p99=750us".parse::<Slo>(), Ok(Slo { p99_us: 750 }));
        for bad in ["50ms", "p50=50ms", "p99=fast", "p99=0s", "p99="] {
            let e = bad.parse::<Slo>().unwrap_err();
            assert!(e.contains("p99=50ms"), "{bad}: {e}");
        }
    }
}
