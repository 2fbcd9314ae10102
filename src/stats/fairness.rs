//! Fairness: does the lock serve waiters in arrival order, and does every client get its share?
//!
//! Arrival order has two readings. Where the recipe reports each grant's queue position (the
//! predecessor strategies: ZooKeeper sequence number, etcd create revision, Redis ticket), the
//! queue itself says who arrived first, and [`QueueOrder`] judges grants by it. Elsewhere only
//! the clients' invoke times are known, and [`FifoTracker`] judges by them; two clients invoking
//! microseconds apart then race on the network, and whoever the server saw first is not a
//! "later" waiter that overtook, so that basis over-counts under a stampede.

use rustc_hash::FxHashMap as HashMap;

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
/// that invoked earlier is still waiting, every such earlier waiter counts one inversion, unless
/// both are readers of a read-write lock (readers granted as one group overtake each other
/// without overtaking anyone's turn).
#[derive(Debug, Default)]
pub struct FifoTracker {
    /// Per key: waiting client → its acquire invoke time and whether it reads.
    waiting: HashMap<String, HashMap<u32, (u64, bool)>>,
}

impl FifoTracker {
    /// `client` started waiting for `key` at `invoke_us`, as a reader when `shared`.
    pub fn invoke(&mut self, key: &str, client: u32, invoke_us: u64, shared: bool) {
        self.waiting
            .entry(key.to_string())
            .or_default()
            .insert(client, (invoke_us, shared));
    }

    /// `client` was granted `key`: returns the number of earlier waiters it overtook.
    pub fn granted(&mut self, key: &str, client: u32) -> u64 {
        let Some(waiters) = self.waiting.get_mut(key) else {
            return 0;
        };
        let Some((mine, reads)) = waiters.remove(&client) else {
            return 0;
        };
        waiters
            .values()
            .filter(|&&(t, shared)| t < mine && !(reads && shared))
            .count() as u64
    }

    /// `client` stopped waiting for `key` without the lock (failure, timeout, unknown).
    pub fn gave_up(&mut self, key: &str, client: u32) {
        if let Some(waiters) = self.waiting.get_mut(key) {
            waiters.remove(&client);
        }
    }
}

/// Counts FIFO inversions by queue position: pairs of grants on the same key where `a` was
/// granted before `b`, `a`'s queue position is larger than `b`'s, and `b` was already waiting
/// (its acquire invoked before `a`'s grant): `a` overtook `b` in the queue. Two readers of a
/// read-write lock are never a pair: a reader group is granted at once and learns it in any
/// order. A position is known only at its grant, so the pairs are counted at the end, from
/// every grant collected.
#[derive(Debug, Default)]
pub struct QueueOrder {
    /// Per key, in grant order.
    grants: HashMap<String, Vec<Grant>>,
    /// Grants seen, and how many of them lacked a position.
    seen: u64,
    without_position: u64,
}

#[derive(Debug, Clone, Copy)]
struct Grant {
    invoke_us: u64,
    grant_us: u64,
    position: u64,
    /// Whether an inversion this grant causes counts (it started after the warm-up).
    counted: bool,
    /// A reader of a read-write lock.
    shared: bool,
}

impl QueueOrder {
    /// A grant of `key` at `grant_us` (grants must come in time order) to an acquire invoked at
    /// `invoke_us`, a reader's when `shared`; `counted` says whether inversions this grant causes
    /// are counted.
    pub fn granted(
        &mut self,
        key: &str,
        invoke_us: u64,
        grant_us: u64,
        position: Option<u64>,
        (counted, shared): (bool, bool),
    ) {
        self.seen += 1;
        let Some(position) = position else {
            self.without_position += 1;
            return;
        };
        let grant = Grant {
            invoke_us,
            grant_us,
            position,
            counted,
            shared,
        };
        // No key allocation per grant: a long run grants the same few keys millions of times.
        match self.grants.get_mut(key) {
            Some(grants) => grants.push(grant),
            None => {
                self.grants.insert(key.to_string(), vec![grant]);
            }
        }
    }

    /// True when there was at least one grant and every grant carried a queue position.
    pub fn usable(&self) -> bool {
        self.seen > 0 && self.without_position == 0
    }

    /// The number of inverted pairs over all keys: every pair, less the pairs of two readers
    /// (whether `b` waited at `a`'s grant is the pair's own, so the readers' grants alone hold
    /// exactly their pairs).
    pub fn inversions(&self) -> u64 {
        self.grants
            .values()
            .map(|g| {
                let readers: Vec<Grant> = g.iter().copied().filter(|g| g.shared).collect();
                inversions_on_key(g) - inversions_on_key(&readers)
            })
            .sum()
    }
}

/// Inverted pairs among one key's grants (in grant order), in O(n log n): for each grant `b`,
/// the counted grants `a` before it with a larger position, minus those granted by the time `b`
/// invoked (`b` was not waiting yet, so they overtook nobody).
fn inversions_on_key(grants: &[Grant]) -> u64 {
    // Positions ranked 1..=n for a Fenwick tree over ranks.
    let mut ranks: Vec<u64> = grants.iter().map(|g| g.position).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let rank = |p: u64| ranks.partition_point(|&r| r < p) + 1;
    // Queries (prefix length, rank of b's position, sign), answered in prefix order.
    let mut queries: Vec<(usize, usize, bool)> = Vec::with_capacity(grants.len() * 2);
    for (i, b) in grants.iter().enumerate() {
        let before_invoke = grants[..i].partition_point(|a| a.grant_us <= b.invoke_us);
        queries.push((i, rank(b.position), true));
        queries.push((before_invoke, rank(b.position), false));
    }
    queries.sort_unstable_by_key(|q| q.0);
    // Fenwick tree: how many counted grants inserted so far have each position rank.
    let mut tree = vec![0u64; ranks.len() + 1];
    let (mut inserted, mut counted_so_far, mut total) = (0usize, 0u64, 0i64);
    for (prefix, r, plus) in queries {
        while inserted < prefix {
            let g = grants[inserted];
            if g.counted {
                let mut k = rank(g.position);
                while k < tree.len() {
                    tree[k] += 1;
                    k += k & k.wrapping_neg();
                }
                counted_so_far += 1;
            }
            inserted += 1;
        }
        let (mut k, mut at_most) = (r, 0u64);
        while k > 0 {
            at_most += tree[k];
            k -= k & k.wrapping_neg();
        }
        let above = (counted_so_far - at_most) as i64;
        total += if plus { above } else { -above };
    }
    total.max(0) as u64
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
        f.invoke("k", 0, 10, false);
        f.invoke("k", 1, 20, false);
        f.invoke("k", 2, 30, false);
        f.invoke("other", 3, 5, false);
        assert_eq!(f.granted("k", 2), 2, "client 2 overtook 0 and 1");
        assert_eq!(f.granted("k", 0), 0);
        f.gave_up("k", 1);
        assert_eq!(f.granted("k", 1), 0, "no longer waiting");
        // Readers overtake readers freely; a reader overtaking a writer, or a writer a reader,
        // counts.
        let mut f = FifoTracker::default();
        f.invoke("k", 0, 10, true);
        f.invoke("k", 1, 20, false);
        f.invoke("k", 2, 30, true);
        f.invoke("k", 3, 40, true);
        assert_eq!(
            f.granted("k", 3),
            1,
            "reader 3 overtook writer 1, not readers 0 and 2"
        );
        assert_eq!(f.granted("k", 1), 1, "writer 1 overtook reader 0");
    }

    #[test]
    fn two_readers_are_never_a_pair_by_queue_position() {
        // Positions 1 (reader), 2 (writer), 3 (reader), 4 (reader), all waiting from 0, granted
        // 4, 3, 1, 2: of the five inverted pairs, (4, 3), (4, 1) and (3, 1) are readers.
        let mut q = QueueOrder::default();
        for (pos, grant, shared) in [(4, 50, true), (3, 51, true), (1, 52, true), (2, 60, false)] {
            q.granted("k", 0, grant, Some(pos), (true, shared));
        }
        assert_eq!(q.inversions(), 2, "4 and 3 overtook writer 2");
        // Read as writers, every pair counts.
        let mut q = QueueOrder::default();
        for (pos, grant) in [(4, 50), (3, 51), (1, 52), (2, 60)] {
            q.granted("k", 0, grant, Some(pos), (true, false));
        }
        assert_eq!(q.inversions(), 5);
    }

    /// Grants of one key as (invoke, grant, position), granted in the order given.
    fn queue(grants: &[(u64, u64, u64)]) -> QueueOrder {
        let mut q = QueueOrder::default();
        for &(invoke, grant, pos) in grants {
            q.granted("k", invoke, grant, Some(pos), (true, false));
        }
        q
    }

    #[test]
    fn a_grant_overtaking_a_queued_waiter_is_one_inversion() {
        // c1 (position 2) is granted at 50 while c0 (position 1) has waited since 0.
        let q = queue(&[(10, 50, 2), (0, 60, 1)]);
        assert!(q.usable());
        assert_eq!(q.inversions(), 1);
        // In queue order: none.
        assert_eq!(queue(&[(0, 50, 1), (10, 60, 2)]).inversions(), 0);
    }

    #[test]
    fn a_waiter_that_arrived_after_the_grant_was_not_overtaken() {
        // Position 5 granted at 50; position 3 invoked only at 60: it was not waiting yet.
        assert_eq!(queue(&[(0, 50, 5), (60, 70, 3)]).inversions(), 0);
        // Invoked at 50, the same microsecond as the grant: not waiting before it either.
        assert_eq!(queue(&[(0, 50, 5), (50, 70, 3)]).inversions(), 0);
        // Invoked at 49: waiting, so overtaken.
        assert_eq!(queue(&[(0, 50, 5), (49, 70, 3)]).inversions(), 1);
    }

    #[test]
    fn one_grant_overtaking_three_counts_three() {
        // Position 4 is granted first while 1, 2 and 3 wait; then they go in order.
        let q = queue(&[(3, 10, 4), (0, 20, 1), (1, 30, 2), (2, 40, 3)]);
        assert_eq!(q.inversions(), 3);
        // Reversed queue, everybody waiting from the start: every pair is inverted, 3+2+1.
        let q = queue(&[(0, 10, 4), (0, 20, 3), (0, 30, 2), (0, 40, 1)]);
        assert_eq!(q.inversions(), 6);
    }

    #[test]
    fn keys_and_warm_up_are_kept_apart() {
        let mut q = QueueOrder::default();
        q.granted("a", 10, 50, Some(2), (true, false));
        q.granted("b", 0, 60, Some(1), (true, false)); // another key: nobody overtaken
        assert_eq!(q.inversions(), 0);
        // An inversion caused by a grant from the warm-up is not counted.
        let mut q = QueueOrder::default();
        q.granted("k", 10, 50, Some(2), (false, false));
        q.granted("k", 0, 60, Some(1), (true, false));
        assert_eq!(q.inversions(), 0);
    }

    #[test]
    fn usable_only_when_every_grant_has_a_position() {
        assert!(
            !QueueOrder::default().usable(),
            "no grants, nothing to judge by"
        );
        let mut q = queue(&[(0, 10, 1)]);
        q.granted("k", 5, 20, None, (true, false));
        assert!(!q.usable());
    }

    #[test]
    fn fast_count_matches_every_pair_checked() {
        // A deterministic jumble: 300 grants, positions shuffled, invokes up to 399 µs before.
        let mut x = 12_345u64;
        let mut next = || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            x >> 33
        };
        let grants: Vec<Grant> = (0..300u64)
            .map(|i| {
                let grant_us = 1000 + i * 10;
                Grant {
                    invoke_us: grant_us - next() % 400,
                    grant_us,
                    position: next() % 1000,
                    counted: next() % 5 != 0,
                    shared: next() % 2 == 0,
                }
            })
            .collect();
        let mut slow = 0u64;
        for (j, b) in grants.iter().enumerate() {
            for a in &grants[..j] {
                slow += u64::from(a.counted && a.position > b.position && b.invoke_us < a.grant_us);
            }
        }
        assert!(slow > 100, "the jumble has inversions to find: {slow}");
        assert_eq!(inversions_on_key(&grants), slow);
        // Without the pairs of two readers.
        let mut slow = 0u64;
        for (j, b) in grants.iter().enumerate() {
            for a in &grants[..j] {
                let pair = a.counted && a.position > b.position && b.invoke_us < a.grant_us;
                slow += u64::from(pair && !(a.shared && b.shared));
            }
        }
        let q = QueueOrder {
            grants: [("k".to_string(), grants)].into_iter().collect(),
            seen: 300,
            without_position: 0,
        };
        assert_eq!(q.inversions(), slow);
    }
}
