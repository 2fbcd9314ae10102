//! The leases one client currently holds, so a background task that learns the session or lease
//! is gone (ZooKeeper session expiry, etcd keep-alive failure) can tell every holder at once.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{LostSignal, LostTrigger};

use crate::sync::LockUnpoisoned;

/// Lost triggers of the held leases of one session (ZooKeeper session, etcd lease).
#[derive(Debug, Default)]
pub(crate) struct Holders {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Why the session is gone, once it is: leases registered later are lost from the start.
    dead: Option<String>,
    next_id: u64,
    triggers: HashMap<u64, LostTrigger>,
}

impl Holders {
    /// Registers a new held lease; its signal fires when the session is lost.
    pub(crate) fn register(&self) -> (u64, LostSignal) {
        let (trigger, signal) = LostSignal::new();
        let mut st = self.lock();
        st.next_id += 1;
        let id = st.next_id;
        if st.dead.is_some() {
            trigger.fire();
        } else {
            st.triggers.insert(id, trigger);
        }
        (id, signal)
    }

    /// Forgets a lease that was released.
    pub(crate) fn forget(&self, id: u64) {
        self.lock().triggers.remove(&id);
    }

    /// Marks the session lost and fires every held lease's signal.
    pub(crate) fn lose_all(&self, why: &str) {
        let mut st = self.lock();
        if st.dead.is_none() {
            st.dead = Some(why.to_string());
        }
        for (_, t) in st.triggers.drain() {
            t.fire();
        }
    }

    /// Fires the signals of the leases held now, without ending the session: it may recover,
    /// but a holder cannot know whether its lock survived.
    pub(crate) fn lose_held(&self) {
        for (_, t) in self.lock().triggers.drain() {
            t.fire();
        }
    }

    /// Why the session is gone, if it is.
    pub(crate) fn dead(&self) -> Option<String> {
        self.lock().dead.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the map inconsistent: keep going.
        self.state.locked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losing_the_session_fires_held_leases_and_later_ones() {
        let h = Holders::default();
        let (a, sig_a) = h.register();
        let (b, sig_b) = h.register();
        h.forget(b);
        h.lose_all("expired");
        assert!(sig_a.is_lost());
        assert!(!sig_b.is_lost(), "a released lease is not told");
        let (_, late) = h.register();
        assert!(
            late.is_lost(),
            "a lease of a dead session is lost from the start"
        );
        assert_eq!(h.dead().as_deref(), Some("expired"));
        h.forget(a);
    }

    #[test]
    fn a_disconnect_fires_held_leases_but_keeps_the_session() {
        let h = Holders::default();
        let (_, sig) = h.register();
        h.lose_held();
        assert!(sig.is_lost());
        assert!(h.dead().is_none());
        let (_, next) = h.register();
        assert!(!next.is_lost());
    }
}
