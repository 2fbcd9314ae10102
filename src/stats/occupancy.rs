//! How many hold a key at once, over time: the step function of a key's certain holds, and its
//! time-weighted mean and maximum over a window (a read-write lock's concurrent readers, a
//! semaphore's holders).
//!
//! A hold counts from its acquire `ok` to its release invoke (open to the window's end when it
//! never released), half-open: a hold that ends at the very microsecond another starts does not
//! overlap it, as the checkers judge it.

use std::collections::BTreeMap;

/// A certain hold of a key, µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold<'a> {
    /// The key held.
    pub key: &'a str,
    /// The acquire `ok`.
    pub from_us: u64,
    /// The release invoke (or where the history or window ends).
    pub to_us: u64,
}

/// Holders over a window: the time-weighted mean per key and the most at once.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Occupancy {
    /// ∫ holders dt summed over the keys, ÷ (keys × the window's length).
    pub mean: f64,
    /// The most holders of one key at once.
    pub max: u64,
}

/// Where the number of holders of one key changes: `(time µs, holders from then on)`, in time
/// order, one step per time; holders are 0 before the first step. `holds` are `(from, to)`
/// pairs, µs; empty ones (`to <= from`) change nothing.
pub fn steps(holds: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut changes: Vec<(u64, i64)> = Vec::new();
    for (from, to) in holds {
        if to > from {
            changes.extend([(from, 1), (to, -1)]);
        }
    }
    // Ends before starts at one time: the holds are half-open.
    changes.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(changes.len());
    let mut holders: i64 = 0;
    for (t, delta) in changes {
        holders += delta;
        let now = holders.max(0) as u64;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = now,
            _ => out.push((t, now)),
        }
    }
    out
}

/// The holders of each key over the window `from_us..to_us`, time-weighted and averaged over
/// `keys` keys (the keys asked for, held or not), and the most of one key at once.
pub fn occupancy<'a>(
    holds: impl IntoIterator<Item = Hold<'a>>,
    keys: usize,
    (from_us, to_us): (u64, u64),
) -> Occupancy {
    let mut by_key: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for h in holds {
        let (a, b) = (h.from_us.max(from_us), h.to_us.min(to_us));
        if b > a {
            by_key.entry(h.key).or_default().push((a, b));
        }
    }
    let (mut area, mut max) = (0u128, 0u64);
    for spans in by_key.into_values() {
        let steps = steps(spans);
        for (i, &(t, holders)) in steps.iter().enumerate() {
            let next = steps.get(i + 1).map_or(to_us, |s| s.0);
            area += u128::from(holders) * u128::from(next.saturating_sub(t));
            max = max.max(holders);
        }
    }
    let span = to_us.saturating_sub(from_us) as f64 * keys as f64;
    Occupancy {
        mean: if span > 0.0 { area as f64 / span } else { 0.0 },
        max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(key: &str, from_us: u64, to_us: u64) -> Hold<'_> {
        Hold {
            key,
            from_us,
            to_us,
        }
    }

    #[test]
    fn steps_count_half_open_holds_and_skip_empty_ones() {
        // [0,10) and [10,20) never overlap; [5,15) overlaps both; [7,7) is empty.
        let s = steps([(0, 10), (10, 20), (5, 15), (7, 7)]);
        assert_eq!(s, vec![(0, 1), (5, 2), (10, 2), (15, 1), (20, 0)]);
    }

    #[test]
    fn the_mean_is_time_weighted_per_key_and_clipped_to_the_window() {
        // Window 100..200 (100 µs), 2 keys. Key a: [50,150) clipped to [100,150): 50 µs of 1;
        // [120,300) clipped to [120,200): 80 µs of 1 → area 130, 2 at once over [120,150).
        // Key b: [100,200): area 100. Mean = (130 + 100) / (2 × 100) = 1.15.
        let o = occupancy(
            [
                hold("a", 50, 150),
                hold("a", 120, 300),
                hold("b", 100, 200),
                hold("b", 10, 90),
            ],
            2,
            (100, 200),
        );
        assert!((o.mean - 1.15).abs() < 1e-12, "{o:?}");
        assert_eq!(o.max, 2);
        // A hold wholly before the window adds nothing, not even to the maximum.
        let before = occupancy([hold("a", 0, 50), hold("a", 10, 60)], 1, (100, 200));
        assert_eq!(before, Occupancy { mean: 0.0, max: 0 });
        // An empty window divides by nothing.
        assert_eq!(occupancy([hold("a", 0, 50)], 1, (50, 50)).mean, 0.0);
    }
}
