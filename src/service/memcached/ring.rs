//! Where a key lives: a ketama-style consistent-hash ring over the servers, as memcached
//! clients place keys (libmemcached's and spymemcached's ketama). Each server puts
//! [`POINTS_PER_NODE`] points on a 32-bit ring, four from each of 40 digests of
//! `<name>-<i>`; a key belongs to the first point at or after its own hash, wrapping around.
//! Removing a server moves only the keys its points held. SHA-256 stands in for ketama's MD5
//! (already a dependency; the spread is the same), so the placement is fixed by the servers'
//! names alone: every process (the runner, its workers) places a key on the same server.

use sha2::{Digest, Sha256};

/// Points each server puts on the ring (ketama's 160: 40 digests × 4).
pub(crate) const POINTS_PER_NODE: usize = 160;

/// A consistent-hash ring over named servers.
#[derive(Debug, Clone)]
pub(crate) struct Ring {
    /// (point, server index), sorted by point.
    points: Vec<(u32, usize)>,
}

/// The four ring points of one 16-byte digest prefix, as ketama reads an MD5 digest.
fn four_points(d: &[u8]) -> [u32; 4] {
    let p = |i: usize| u32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]]);
    [p(0), p(1), p(2), p(3)]
}

/// A key's position on the ring.
fn key_point(key: &str) -> u32 {
    four_points(&Sha256::digest(key.as_bytes()))[0]
}

impl Ring {
    /// The ring of servers `names` (their index in it is what [`Ring::node_for`] answers).
    pub(crate) fn new<S: AsRef<str>>(names: &[S]) -> Ring {
        let mut points = Vec::with_capacity(names.len() * POINTS_PER_NODE);
        for (i, name) in names.iter().enumerate() {
            for d in 0..POINTS_PER_NODE / 4 {
                let digest = Sha256::digest(format!("{}-{d}", name.as_ref()).as_bytes());
                points.extend(four_points(&digest).into_iter().map(|p| (p, i)));
            }
        }
        points.sort_unstable();
        Ring { points }
    }

    /// The index of the server `key` lives on; `None` for a ring of no servers.
    pub(crate) fn node_for(&self, key: &str) -> Option<usize> {
        let h = key_point(key);
        let at = self.points.partition_point(|&(p, _)| p < h);
        self.points
            .get(at)
            .or_else(|| self.points.first())
            .map(|&(_, n)| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("memcached{i}")).collect()
    }

    fn keys(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("/lockbench/run/cell/k{i}"))
            .collect()
    }

    #[test]
    fn placement_is_stable_and_every_key_has_a_server() {
        let a = Ring::new(&names(3));
        let b = Ring::new(&names(3));
        for k in keys(500) {
            let n = a.node_for(&k).unwrap();
            assert!(n < 3);
            assert_eq!(Some(n), b.node_for(&k), "{k}: the same in every process");
        }
        // Pinned, so a change of the hash (which would move every lock) is seen.
        let pinned: Vec<usize> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|k| a.node_for(k).unwrap())
            .collect();
        assert_eq!(pinned, PINNED);
        assert_eq!(Ring::new::<String>(&[]).node_for("k"), None);
        assert_eq!(Ring::new(&names(1)).node_for("k"), Some(0));
    }

    /// The servers of keys `a` to `f` on `memcached1..3`, as first computed.
    const PINNED: [usize; 6] = [2, 1, 0, 1, 1, 2];

    #[test]
    fn keys_spread_roughly_evenly_over_three_servers() {
        let ring = Ring::new(&names(3));
        let mut count = [0usize; 3];
        let n = 30_000;
        for k in keys(n) {
            count[ring.node_for(&k).unwrap()] += 1;
        }
        // A third each is 10 000; 160 points per server keep each within ±20 %.
        for (i, c) in count.iter().enumerate() {
            assert!(
                (8_000..=12_000).contains(c),
                "memcached{} holds {c} of {n} keys: {count:?}",
                i + 1
            );
        }
    }

    #[test]
    fn removing_a_server_moves_only_its_keys() {
        let all = names(3);
        let three = Ring::new(&all);
        // memcached2 removed: the ring of memcached1 and memcached3 (indices 0 and 1 there).
        let two = Ring::new(&[all[0].clone(), all[2].clone()]);
        let back = [0usize, 2];
        let (mut moved, mut stayed) = (0, 0);
        for k in keys(5_000) {
            let before = three.node_for(&k).unwrap();
            let after = back[two.node_for(&k).unwrap()];
            if before == 1 {
                moved += 1;
            } else {
                assert_eq!(after, before, "{k} moved though its server stayed");
                stayed += 1;
            }
        }
        assert!(
            moved > 1_000 && stayed > 2_500,
            "{moved} moved, {stayed} stayed"
        );
    }
}
