//! The clean-up chores a Redis or Redlock client hands its janitor, and how an acquisition
//! whose outcome is unknown learns what became of it (Redisson's approach: an unlock is retried
//! until the server answers, and a lock whose answer was lost is recognised by its owner value).
//!
//! One chore is one owner-checked give-back on one server: the Sentinel master as it is now,
//! or one Redlock master, each master with a janitor of its own (a janitor tries its chores one
//! after another, and a paused master must not hold up the give-backs due on the others). Owner
//! values are unique per acquisition, so a give-back never removes
//! someone else's lock, and repeating it is harmless. A chore that carries a [`Claim`] first
//! asks whether a lost take granted the lock: the acquisition waiting on it then gets the grant
//! rather than a withdrawal, unless it stopped waiting, in which case the chore gives the lock
//! back like any other.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::recipe::janitor::{Chore, Tried, TryFuture};
use crate::recipe::{RecipeConfig, Tally};
use crate::service::redis::recipe::Master;
use crate::service::redis::recipe::common::wake_message;
use crate::service::redis::recipe::scripts::{Keys, QueueEntry};
use crate::service::redis::recipe::server::Server;
use crate::sync::LockUnpoisoned;

/// How a give-back treats the queue entry: it leaves (the entry TTL is then unused).
const LEAVE: (QueueEntry, Duration) = (QueueEntry::Leave, Duration::ZERO);

/// The server a janitor gives back on.
pub(crate) enum Target {
    /// Whichever server is the master now (asked of Sentinel again after a failed try).
    Master(Arc<Master>),
    /// One Redlock master.
    Node(Arc<Server>),
}

/// What the janitor's tries share: the server, and the deadline and TTL of one request.
pub(crate) struct RedisJanitorCtx {
    target: Target,
    limit: Duration,
    /// The TTL a claimed grant is renewed for.
    ttl: Duration,
}

impl RedisJanitorCtx {
    pub(crate) fn new(target: Target, cfg: &RecipeConfig) -> RedisJanitorCtx {
        RedisJanitorCtx {
            target,
            limit: cfg.request_timeout,
            ttl: cfg.ttl,
        }
    }
}

/// Give back `owner`'s lock and queue entry on one server, until the server answers.
#[derive(Clone)]
pub(crate) struct GiveBack {
    pub keys: Keys,
    pub owner: String,
    /// The message this give-back publishes ([`wake_message`]): one for every try and every
    /// master, so a waiter that hears it twice (a retry after a lost reply, or two Redlock
    /// masters) counts one wake-up, as for any release.
    pub wake: String,
    /// Redlock's release raises the master's fencing counter to the lease's token (0: none).
    pub token: u64,
    /// An acquisition that waits to learn whether a lost take granted it the lock.
    pub claim: Option<Arc<Claim>>,
    /// A read, write or permit claim: given back (and resolved) by the queue's scripts.
    pub shared: bool,
}

impl GiveBack {
    /// A plain give-back, with a message of its own.
    pub(crate) fn new(keys: &Keys, owner: &str, token: u64) -> GiveBack {
        GiveBack {
            keys: keys.clone(),
            owner: owner.to_string(),
            wake: wake_message(owner),
            token,
            claim: None,
            shared: false,
        }
    }

    /// The same, finishing a release that already published `wake` elsewhere (on another
    /// master, or in an attempt whose answer was lost): the retry publishes that message again.
    pub(crate) fn waking(mut self, wake: &str) -> GiveBack {
        self.wake = wake.to_string();
        self
    }

    /// The same for a read, write or permit claim (see `shared.rs`).
    pub(crate) fn shared(mut self, shared: bool) -> GiveBack {
        self.shared = shared;
        self
    }

    /// The same, asking first whether the lock is `owner`'s (see [`Claim`]).
    pub(crate) fn claiming(mut self, claim: &Arc<Claim>) -> GiveBack {
        self.claim = Some(claim.clone());
        self
    }
}

/// Between an acquisition whose outcome is unknown and the chore that resolves it: the grant
/// the chore found, or that the acquisition stopped waiting (then a grant found later is given
/// back, as nobody will use it). One lock decides both, so a grant is never found for an
/// acquisition that has just given up, nor left behind by one.
#[derive(Debug, Default)]
pub(crate) struct Claim(Mutex<ClaimState>);

#[derive(Debug, Default, Clone, Copy)]
enum ClaimState {
    #[default]
    Waiting,
    Found {
        token: u64,
        sent: Instant,
    },
    Gone,
}

impl Claim {
    pub(crate) fn new() -> Arc<Claim> {
        Arc::new(Claim::default())
    }

    fn waiting(&self) -> bool {
        matches!(*self.0.locked(), ClaimState::Waiting)
    }

    /// The server says the lock is the owner's, renewed by a request sent at `sent`: true
    /// when the acquisition still waits and takes the grant.
    fn found(&self, token: u64, sent: Instant) -> bool {
        let mut s = self.0.locked();
        match *s {
            ClaimState::Waiting => {
                *s = ClaimState::Found { token, sent };
                true
            }
            ClaimState::Found { .. } => true,
            ClaimState::Gone => false,
        }
    }

    /// The acquisition stops waiting: the grant's token and the send time of the renewal that
    /// confirmed it, if the chore found one; otherwise the chore gives back whatever it finds
    /// from now on.
    pub(crate) fn settle(&self) -> Option<(u64, Instant)> {
        let mut s = self.0.locked();
        match *s {
            ClaimState::Found { token, sent } => Some((token, sent)),
            _ => {
                *s = ClaimState::Gone;
                None
            }
        }
    }
}

impl Chore for GiveBack {
    type Ctx = RedisJanitorCtx;

    fn try_once<'a>(&'a self, ctx: &'a mut Self::Ctx, sent: &'a Tally) -> TryFuture<'a> {
        Box::pin(async move {
            let node = match &ctx.target {
                Target::Master(m) => m.current().await,
                Target::Node(n) => n.clone(),
            };
            let (keys, owner, wake) = (&self.keys, self.owner.as_str(), self.wake.as_str());
            let mut claiming = self.claim.as_ref().filter(|c| c.waiting());
            loop {
                sent.requests(1);
                let at = Instant::now();
                let answer = match claiming {
                    Some(_) if self.shared => {
                        node.shared_resolve(keys, owner, ctx.ttl, wake, ctx.limit)
                            .await
                    }
                    Some(_) => node.resolve(keys, owner, ctx.ttl, wake, ctx.limit).await,
                    None if self.shared => node
                        .shared_release(keys, owner, self.token, LEAVE, wake, ctx.limit)
                        .await
                        .map(|_| 0),
                    None => node
                        .release(
                            keys,
                            owner,
                            self.token,
                            Some(wake),
                            QueueEntry::Leave,
                            ctx.limit,
                        )
                        .await
                        .map(|_| 0),
                };
                match (answer, claiming) {
                    // The acquisition gave up meanwhile: nobody will use the grant.
                    (Ok(token), Some(c)) if token > 0 && !c.found(token, at) => claiming = None,
                    (Ok(_), _) => return Tried::Done,
                    (Err(e), _) => {
                        if let (Target::Master(m), true) = (&ctx.target, e.is_retryable()) {
                            // The master may have moved (a failover): ask Sentinel again.
                            m.reresolve(&node, Instant::now() + ctx.limit).await;
                        }
                        return Tried::Again;
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::redis::recipe::common::Waiter;

    #[tokio::test]
    async fn a_retried_give_back_publishes_its_release_message_so_a_waiter_counts_one() {
        let keys = Keys::new("/t", "k");
        let wake = wake_message("c1:1");
        // A Redlock release whose answer from one master was lost: the janitor's retry there,
        // and any later try, carry the message the other masters already published.
        let retry = GiveBack::new(&keys, "c1:1", 4).waking(&wake);
        let later_try = retry.clone();
        let mut w = Waiter::new();
        for m in [&wake, &retry.wake, &later_try.wake] {
            w.tx.send(m.clone().into_bytes()).unwrap();
        }
        assert!(w.wait(Duration::from_secs(1)).await);
        assert_eq!(w.wakeups, 1, "one release, heard three times");
        // A give-back of its own (an acquisition's clean-up) is a new message, the same on every
        // master it is cloned to, and another wake-up.
        let own = GiveBack::new(&keys, "c1:2", 0);
        assert_ne!(own.wake, wake);
        for m in [&own.wake, &own.clone().wake] {
            w.tx.send(m.clone().into_bytes()).unwrap();
        }
        assert!(w.wait(Duration::from_secs(1)).await);
        assert_eq!(w.wakeups, 2);
    }

    #[test]
    fn a_claim_takes_a_grant_found_while_waiting_and_refuses_one_found_after() {
        let t0 = Instant::now();
        let c = Claim::new();
        assert!(c.waiting());
        assert!(c.found(7, t0));
        // Settling after the find: the acquisition gets the grant, whenever it settles.
        assert_eq!(c.settle(), Some((7, t0)));
        assert_eq!(c.settle(), Some((7, t0)));

        let c = Claim::new();
        assert_eq!(c.settle(), None);
        assert!(!c.waiting(), "a settled claim stops asking");
        // Found after the acquisition left: refused, so the chore gives it back.
        assert!(!c.found(9, t0));
        assert_eq!(c.settle(), None);
    }
}
