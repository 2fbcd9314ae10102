//! Re-entry with a client-side count, the way Curator's `InterProcessMutex` does it: a client
//! that holds a key takes it again without asking the server, and only the release of the outer
//! hold reaches the server. Redisson keeps the count on the server instead (a hash field per
//! owner, a round trip per re-entry); lockbench counts on the client on every system and under
//! every strategy, so a re-entry costs no request anywhere, and a measured re-entry shows what
//! the count costs the client (microseconds, no round trip).
//!
//! A re-entry checks the outer lease first: once its lost signal has fired, the holder is told
//! so ([`LockError::Lost`]) rather than counted in again, as a client that knows its lock is gone
//! must not go on as its holder.

use rustc_hash::FxHashMap as HashMap;

use super::{Lease, LockError};

/// One client's holds by key: how many times each held key was taken.
#[derive(Debug, Default)]
pub struct HoldCount {
    depth: HashMap<String, u64>,
}

impl HoldCount {
    /// The outer grant of `lease` (depth 1). Returns the depth now held.
    pub fn granted(&mut self, lease: &Lease) -> u64 {
        let d = self.depth.entry(lease.key.clone()).or_insert(0);
        *d += 1;
        *d
    }

    /// Takes `lease`'s key again, without a request: the depth now held, or [`LockError::Lost`]
    /// when the lease is known lost (the count is then left as it was).
    pub fn reenter(&mut self, lease: &Lease) -> Result<u64, LockError> {
        if lease.lost.is_lost() {
            return Err(LockError::Lost {
                key: lease.key.clone(),
                why: "the outer hold's lease was lost before the re-entry".into(),
            });
        }
        Ok(self.granted(lease))
    }

    /// Gives one hold of `key` back: the depth released (1 is the outer hold, which the caller
    /// then releases on the server), or [`LockError::Server`] when this client holds nothing
    /// on `key` (a release by a non-holder: the caller's bug, refused before any request).
    pub fn release(&mut self, key: &str) -> Result<u64, LockError> {
        match self.depth.get_mut(key) {
            Some(d) if *d > 0 => {
                let released = *d;
                *d -= 1;
                if *d == 0 {
                    self.depth.remove(key);
                }
                Ok(released)
            }
            _ => Err(LockError::Server(format!(
                "release of '{key}' by a client that does not hold it"
            ))),
        }
    }

    /// The depth this client holds `key` at (0: not held).
    pub fn depth(&self, key: &str) -> u64 {
        self.depth.get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::recipe::LostSignal;

    fn lease(key: &str, lost: LostSignal) -> Lease {
        Lease::for_test(key, lost)
    }

    #[test]
    fn nested_holds_count_up_and_only_the_last_release_is_the_outer_one() {
        let mut held = HoldCount::default();
        let (_keep, lost) = LostSignal::new();
        let l = lease("k", lost);
        assert_eq!(held.granted(&l), 1);
        assert_eq!(held.reenter(&l).unwrap(), 2);
        assert_eq!(held.reenter(&l).unwrap(), 3);
        assert_eq!(held.depth("k"), 3);
        assert_eq!(held.release("k").unwrap(), 3);
        assert_eq!(held.release("k").unwrap(), 2);
        assert_eq!(held.release("k").unwrap(), 1, "the outer hold, last");
        assert_eq!(held.depth("k"), 0);
        assert!(matches!(held.release("k"), Err(LockError::Server(_))));
        assert!(matches!(held.release("other"), Err(LockError::Server(_))));
    }

    #[test]
    fn a_lost_lease_is_not_entered_again() {
        let (fire, lost) = LostSignal::new();
        let mut held = HoldCount::default();
        let l = lease("k", lost);
        held.granted(&l);
        fire.fire();
        assert!(matches!(held.reenter(&l), Err(LockError::Lost { .. })));
        assert_eq!(held.depth("k"), 1, "the refused re-entry counts nothing");
    }
}
