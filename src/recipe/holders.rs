//! The leases one client currently holds, so a background task that learns the session or lease
//! is gone (ZooKeeper session expiry, etcd keep-alive failure) can tell every holder at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::{LostSignal, LostTrigger};

use crate::sync::LockUnpoisoned;

/// Lost triggers of the held leases of one session (ZooKeeper session, etcd lease).
#[derive(Debug, Default)]
pub(crate) struct Holders {
    state: Mutex<State>,
    /// Where the session's validity is a clock reading (etcd's lease), the instant it ends
    /// unless renewed: every signal handed out reads it.
    valid_until: Option<tokio::sync::watch::Sender<Instant>>,
}

#[derive(Debug, Default)]
struct State {
    /// Why the session is gone, once it is: leases registered later are lost from the start.
    dead: Option<String>,
    next_id: u64,
    triggers: HashMap<u64, LostTrigger>,
}

impl Holders {
    /// Holders of a session valid until `until` unless [`Holders::renewed_until`] moves it:
    /// each signal is lost from that instant on by the clock alone.
    pub(crate) fn valid_until(until: Instant) -> Holders {
        Holders {
            valid_until: Some(tokio::sync::watch::Sender::new(until)),
            ..Holders::default()
        }
    }

    /// A renewal moved the session's validity to `until`.
    pub(crate) fn renewed_until(&self, until: Instant) {
        if let Some(v) = &self.valid_until {
            v.send_replace(until);
        }
    }

    /// Registers a new held lease; its signal fires when the session is lost.
    pub(crate) fn register(&self) -> (u64, LostSignal) {
        let (trigger, signal) = LostSignal::new();
        let signal = match &self.valid_until {
            Some(v) => signal.renewed_by(v.subscribe()),
            None => signal,
        };
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
    use std::time::Duration;

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

    /// A session valid by the clock: its holders are lost once the instant passes, with no
    /// task firing anything, and a renewal moves the instant for every signal handed out.
    #[tokio::test]
    async fn a_lease_unrenewed_past_its_validity_is_lost_by_the_clock() {
        let start = Instant::now();
        let first = start + Duration::from_millis(100);
        let h = Holders::valid_until(first);
        let (_, mut sig) = h.register();
        assert_eq!(sig.valid_until(), Some(first));
        let renewed = start + Duration::from_secs(1);
        h.renewed_until(renewed);
        assert_eq!(
            sig.valid_until(),
            Some(renewed),
            "the renewal moved the end"
        );
        tokio::time::sleep_until((first + Duration::from_millis(50)).into()).await;
        assert!(!sig.is_lost() || Instant::now() >= renewed);
        sig.wait().await;
        assert!(
            Instant::now() >= renewed,
            "lost no sooner than the renewed end"
        );
        assert!(sig.is_lost());
        assert!(h.dead().is_none(), "nobody fired: the clock alone");
        let (_, late) = h.register();
        assert!(
            late.is_lost(),
            "a lease taken after the end is lost from the start"
        );
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
