//! Random choices a client makes: how long to hold, how long to think, which key to lock.
//!
//! Every choice draws from a per-client generator seeded from the workload seed and the client
//! index, so a run with the same seed makes the same choices in the same order.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The generator for one client: a pure function of `(seed, client)`.
pub fn client_rng(seed: u64, client: u32) -> StdRng {
    // SplitMix64 spreads neighbouring (seed, client) pairs apart, so client 1 of seed 7 and
    // client 0 of seed 8 do not start from related states.
    let mut z = seed ^ (u64::from(client).wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    StdRng::seed_from_u64(z ^ (z >> 31))
}

/// A distribution of durations (hold or think time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DurationDist {
    /// Always the same duration.
    Fixed(Duration),
    /// Uniform between `min` and `max`, both inclusive.
    Uniform { min: Duration, max: Duration },
    /// Exponential with the given mean: memoryless, as independent arrivals are.
    Exponential { mean: Duration },
}

impl DurationDist {
    /// Draws one duration; never negative, never more than 1000 × the mean for exponential (a
    /// cap that keeps one freak draw from stalling a client for the rest of a run).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        match *self {
            DurationDist::Fixed(d) => d,
            DurationDist::Uniform { min, max } => {
                let (lo, hi) = (min.as_nanos() as u64, max.as_nanos() as u64);
                Duration::from_nanos(rng.random_range(lo..=hi))
            }
            DurationDist::Exponential { mean } => {
                // Inverse CDF; 1 - u lies in (0, 1], so ln never sees zero.
                let u: f64 = rng.random();
                let x = -(1.0 - u).ln() * mean.as_secs_f64();
                Duration::from_secs_f64(x.min(mean.as_secs_f64() * 1000.0))
            }
        }
    }

    /// The expected value of a draw.
    pub fn mean(&self) -> Duration {
        match *self {
            DurationDist::Fixed(d) => d,
            DurationDist::Uniform { min, max } => (min + max) / 2,
            DurationDist::Exponential { mean } => mean,
        }
    }

    /// The largest value a draw can take.
    pub fn max(&self) -> Duration {
        match *self {
            DurationDist::Fixed(d) => d,
            DurationDist::Uniform { max, .. } => max,
            DurationDist::Exponential { mean } => mean * 1000,
        }
    }
}

/// How keys are spread over acquisitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDistribution {
    /// Every key equally likely.
    Uniform,
    /// Key of rank k (1-based) chosen with probability proportional to 1/k^exponent.
    Zipf { exponent: f64 },
}

/// Picks key indices `0..keys` under a [`KeyDistribution`]; build once, share between clients.
#[derive(Debug, Clone)]
pub struct KeyChooser {
    /// Cumulative probabilities, last entry 1.0; empty for uniform (no table needed).
    cdf: Vec<f64>,
    keys: u32,
}

impl KeyChooser {
    /// A chooser over `keys` keys (at least one; zero is treated as one).
    pub fn new(keys: u32, dist: KeyDistribution) -> KeyChooser {
        let keys = keys.max(1);
        let cdf = match dist {
            KeyDistribution::Uniform => Vec::new(),
            KeyDistribution::Zipf { exponent } => {
                let weights: Vec<f64> = (1..=keys)
                    .map(|k| 1.0 / f64::from(k).powf(exponent))
                    .collect();
                let total: f64 = weights.iter().sum();
                let mut acc = 0.0;
                let mut cdf: Vec<f64> = weights
                    .iter()
                    .map(|w| {
                        acc += w / total;
                        acc
                    })
                    .collect();
                // Rounding can leave the last entry a hair below 1.0; a draw above it must
                // still land on the last key.
                if let Some(last) = cdf.last_mut() {
                    *last = 1.0;
                }
                cdf
            }
        };
        KeyChooser { cdf, keys }
    }

    /// Number of keys.
    pub fn keys(&self) -> u32 {
        self.keys
    }

    /// The probability of key index `i` (rank `i + 1`).
    pub fn probability(&self, i: u32) -> f64 {
        if i >= self.keys {
            return 0.0;
        }
        if self.cdf.is_empty() {
            return 1.0 / f64::from(self.keys);
        }
        let i = i as usize;
        self.cdf[i] - if i == 0 { 0.0 } else { self.cdf[i - 1] }
    }

    /// Draws a key index in `0..keys`; index 0 is the hottest key under zipf.
    pub fn choose<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        if self.cdf.is_empty() {
            return rng.random_range(0..self.keys);
        }
        let u: f64 = rng.random();
        // First entry whose cumulative probability exceeds u.
        let i = self.cdf.partition_point(|&c| c <= u);
        (i as u32).min(self.keys - 1)
    }

    /// The lock name for key index `i`, the same in every run and report.
    pub fn key_name(i: u32) -> String {
        format!("k{i:05}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 100_000;

    #[test]
    fn same_seed_same_sequence_and_clients_differ() {
        let d = DurationDist::Uniform {
            min: Duration::from_millis(1),
            max: Duration::from_millis(5),
        };
        let draw = |seed, client| {
            let mut r = client_rng(seed, client);
            (0..50).map(|_| d.sample(&mut r)).collect::<Vec<_>>()
        };
        assert_eq!(draw(42, 3), draw(42, 3));
        assert_ne!(draw(42, 3), draw(42, 4));
        assert_ne!(draw(42, 3), draw(43, 3));

        let kc = KeyChooser::new(16, KeyDistribution::Zipf { exponent: 1.1 });
        let keys = |seed| {
            let mut r = client_rng(seed, 0);
            (0..50).map(|_| kc.choose(&mut r)).collect::<Vec<_>>()
        };
        assert_eq!(keys(9), keys(9));
    }

    #[test]
    fn zipf_rank_one_frequency_matches_theory() {
        let kc = KeyChooser::new(16, KeyDistribution::Zipf { exponent: 1.1 });
        let h16: f64 = (1..=16).map(|k| 1.0 / f64::from(k).powf(1.1)).sum();
        let expected = 1.0 / h16; // about 0.316
        assert!((kc.probability(0) - expected).abs() < 1e-12);
        let mut rng = client_rng(1, 0);
        let mut counts = [0usize; 16];
        for _ in 0..N {
            counts[kc.choose(&mut rng) as usize] += 1;
        }
        let f1 = counts[0] as f64 / N as f64;
        assert!((f1 - expected).abs() < 0.01, "rank 1: {f1} vs {expected}");
        let f2 = counts[1] as f64 / N as f64;
        let e2 = expected / 2f64.powf(1.1);
        assert!((f2 - e2).abs() < 0.01, "rank 2: {f2} vs {e2}");
        assert!(counts[15] > 0 && counts[0] > counts[15] * 10);
    }

    #[test]
    fn uniform_keys_spread_evenly() {
        let kc = KeyChooser::new(4, KeyDistribution::Uniform);
        let mut rng = client_rng(5, 2);
        let mut counts = [0usize; 4];
        for _ in 0..N {
            counts[kc.choose(&mut rng) as usize] += 1;
        }
        for c in counts {
            assert!((c as f64 / N as f64 - 0.25).abs() < 0.01, "{counts:?}");
        }
        assert_eq!(KeyChooser::key_name(7), "k00007");
    }

    fn mean_of(d: DurationDist, seed: u64) -> f64 {
        let mut rng = client_rng(seed, 0);
        (0..N)
            .map(|_| d.sample(&mut rng).as_secs_f64())
            .sum::<f64>()
            / N as f64
    }

    #[test]
    fn uniform_and_exponential_means_within_tolerance() {
        let u = DurationDist::Uniform {
            min: Duration::from_millis(1),
            max: Duration::from_millis(5),
        };
        let m = mean_of(u, 11);
        assert!((m - 0.003).abs() < 0.003 * 0.02, "uniform mean {m}");
        let e = DurationDist::Exponential {
            mean: Duration::from_millis(3),
        };
        let m = mean_of(e, 12);
        assert!((m - 0.003).abs() < 0.003 * 0.03, "exponential mean {m}");
        let f = DurationDist::Fixed(Duration::from_millis(2));
        assert!((mean_of(f, 1) - 0.002).abs() < 1e-12);
        // Bounds hold for every uniform draw.
        let mut rng = client_rng(3, 3);
        for _ in 0..1000 {
            let x = u.sample(&mut rng);
            assert!(x >= Duration::from_millis(1) && x <= Duration::from_millis(5));
        }
    }
}
