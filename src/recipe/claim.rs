//! What one acquisition asks for ([`Claim`]: exclusive, read, write or one of N permits), and
//! the one rule every queue-based recipe grants by ([`turn`]), so that ZooKeeper's sequential
//! nodes, etcd's create revisions and Redis's tickets decide alike and the rule is tested once.
//!
//! The queue is FIFO: entries hold in the order they joined, as far as the kind allows.
//! - **exclusive** and **write**: the head of the queue holds; a waiter watches the entry just
//!   ahead of it.
//! - **read**: holds when no writer is ahead of it (readers ahead may hold with it); a reader
//!   watches the nearest writer ahead. A reader that joins behind a waiting writer waits for
//!   it: the policy is FIFO, not reader preference, so writers do not starve.
//! - **permit** of N: the first N entries hold. The first waiter (the (N+1)-th entry) watches
//!   the holders as a group, and is woken when any of them goes; every later waiter watches the
//!   entry just ahead of it, which marks its own grant when it gets one (Curator's
//!   `InterProcessSemaphoreV2` gets the same effect from a mutex in front of its lease nodes).
//!   So one release wakes the first waiter, and its grant wakes the next: wake-ups per grant
//!   stay near 2 whatever N is, where the herd wakes every waiter.

/// What one acquisition asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The whole lock (mutex, reentrant lock).
    Exclusive,
    /// A read-write lock's shared side.
    Read,
    /// A read-write lock's exclusive side.
    Write,
    /// One of a semaphore's `permits`.
    Permit {
        /// How many may hold at once.
        permits: u32,
    },
}

impl Claim {
    /// Whether the claim may share the lock with other holders, so that a recipe must queue it
    /// (a single lock node or key cannot hold it).
    pub fn is_shared_kind(self) -> bool {
        !matches!(self, Claim::Exclusive)
    }

    /// The word server-side names carry for the claim (a ZooKeeper node's name, an etcd key's
    /// suffix, a Redis queue entry), so that every waiter reads every entry's claim from the
    /// queue itself.
    pub fn word(self) -> &'static str {
        match self {
            Claim::Exclusive => "lock",
            Claim::Read => "read",
            Claim::Write => "write",
            Claim::Permit { .. } => "permit",
        }
    }

    /// Whether an entry named with `word` (see [`Claim::word`]) excludes a reader behind it:
    /// anything but another reader does.
    pub fn word_blocks_readers(word: &str) -> bool {
        word != Claim::Read.word()
    }
}

/// Where a queued acquisition stands, and what it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// It holds the lock.
    Granted,
    /// It waits for the entry at this index of the queue to go (or, for a permit, to mark its
    /// own grant): the predecessor strategy watches that one entry.
    Behind(usize),
    /// A semaphore's first waiter: it waits for any holder to go, watching the holders as a
    /// group.
    FirstWaiter,
}

/// Where the entry at index `me` of a queue stands. `blocks_readers(i)` says whether entry `i`
/// (ahead of `me`) excludes a reader: true for a writer or an exclusive entry.
pub fn turn(claim: Claim, me: usize, blocks_readers: impl Fn(usize) -> bool) -> Turn {
    match claim {
        Claim::Exclusive | Claim::Write => match me {
            0 => Turn::Granted,
            _ => Turn::Behind(me - 1),
        },
        Claim::Read => match (0..me).rev().find(|&i| blocks_readers(i)) {
            None => Turn::Granted,
            Some(w) => Turn::Behind(w),
        },
        Claim::Permit { permits } => {
            let n = permits.max(1) as usize;
            if me < n {
                Turn::Granted
            } else if me == n {
                Turn::FirstWaiter
            } else {
                Turn::Behind(me - 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The turn of entry `me` in a queue of claim words.
    fn turn_in(claim: Claim, queue: &[&str], me: usize) -> Turn {
        turn(claim, me, |i| Claim::word_blocks_readers(queue[i]))
    }

    #[test]
    fn exclusive_and_writers_hold_at_the_head_and_watch_the_one_ahead() {
        for c in [Claim::Exclusive, Claim::Write] {
            assert_eq!(turn_in(c, &["x"], 0), Turn::Granted);
            assert_eq!(turn_in(c, &["read", "read", "x"], 2), Turn::Behind(1));
        }
    }

    #[test]
    fn readers_share_until_a_writer_is_ahead_and_watch_the_nearest_writer() {
        let q = ["read", "read", "write", "read", "read", "write", "read"];
        assert_eq!(turn_in(Claim::Read, &q, 0), Turn::Granted);
        assert_eq!(turn_in(Claim::Read, &q, 1), Turn::Granted);
        // FIFO: a reader behind a waiting writer waits for that writer, not the readers.
        assert_eq!(turn_in(Claim::Read, &q, 3), Turn::Behind(2));
        assert_eq!(turn_in(Claim::Read, &q, 4), Turn::Behind(2));
        assert_eq!(turn_in(Claim::Read, &q, 6), Turn::Behind(5));
        // An exclusive entry (`lock`) blocks readers as a writer does.
        assert_eq!(turn_in(Claim::Read, &["lock", "read"], 1), Turn::Behind(0));
    }

    #[test]
    fn the_first_n_permits_hold_the_next_watches_the_holders_the_rest_the_one_ahead() {
        let p = Claim::Permit { permits: 3 };
        let q = ["permit"; 6];
        assert_eq!(
            (0..6).map(|i| turn_in(p, &q, i)).collect::<Vec<_>>(),
            vec![
                Turn::Granted,
                Turn::Granted,
                Turn::Granted,
                Turn::FirstWaiter,
                Turn::Behind(3),
                Turn::Behind(4)
            ]
        );
        // One permit is a mutex with a group of one to watch.
        let one = Claim::Permit { permits: 1 };
        assert_eq!(turn_in(one, &q, 0), Turn::Granted);
        assert_eq!(turn_in(one, &q, 1), Turn::FirstWaiter);
    }
}
