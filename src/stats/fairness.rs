//! Fairness: does the lock serve waiters in arrival order, and does every client get its share?

use std::collections::HashMap;

/// Jain's fairness index over per-client shares: 1.0 when all are equal, 1/n when one client
/// takes everything. `None` when nobody got anything (the index is undefined).
pub fn jain_index(shares: &[u64]) -> Option<f64> {
    let sum: f64 = shares.iter().map(|&x| x as f64).sum();
    let squares: f64 = shares.iter().map(|&x| (x as f64) * (x as f64)).sum();
    if shares.is_empty() || squares == 0.0 {
        return None;
    }
    Some(sum * sum / (shares.len() as f64 * squares))
}

/// Counts FIFO inversions: each time a waiter is granted a key while a waiter on the same key
/// that invoked earlier is still waiting, every such earlier waiter counts one inversion.
#[derive(Debug, Default)]
pub struct FifoTracker {
    /// Per key: waiting client → its acquire invoke time.
    waiting: HashMap<String, HashMap<u32, u64>>,
}

impl FifoTracker {
    /// `client` started waiting for `key` at `invoke_us`.
    pub fn invoke(&mut self, key: &str, client: u32, invoke_us: u64) {
        self.waiting
            .entry(key.to_string())
            .or_default()
            .insert(client, invoke_us);
    }

    /// `client` was granted `key`: returns the number of earlier waiters it overtook.
    pub fn granted(&mut self, key: &str, client: u32) -> u64 {
        let Some(waiters) = self.waiting.get_mut(key) else {
            return 0;
        };
        let Some(mine) = waiters.remove(&client) else {
            return 0;
        };
        waiters.values().filter(|&&t| t < mine).count() as u64
    }

    /// `client` stopped waiting for `key` without the lock (failure, timeout, unknown).
    pub fn gave_up(&mut self, key: &str, client: u32) {
        if let Some(waiters) = self.waiting.get_mut(key) {
            waiters.remove(&client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_and_one_over_n_for_a_monopoly() {
        assert_eq!(jain_index(&[5, 5, 5, 5]), Some(1.0));
        let j = jain_index(&[12, 0, 0, 0]).unwrap();
        assert!((j - 0.25).abs() < 1e-12, "{j}");
        let j = jain_index(&[3, 1]).unwrap(); // 16 / (2 × 10)
        assert!((j - 0.8).abs() < 1e-12, "{j}");
        assert_eq!(jain_index(&[0, 0]), None);
        assert_eq!(jain_index(&[]), None);
    }

    #[test]
    fn overtaking_counts_each_earlier_waiter() {
        let mut f = FifoTracker::default();
        f.invoke("k", 0, 10);
        f.invoke("k", 1, 20);
        f.invoke("k", 2, 30);
        f.invoke("other", 3, 5);
        assert_eq!(f.granted("k", 2), 2, "client 2 overtook 0 and 1");
        assert_eq!(f.granted("k", 0), 0);
        f.gave_up("k", 1);
        assert_eq!(f.granted("k", 1), 0, "no longer waiting");
    }
}
