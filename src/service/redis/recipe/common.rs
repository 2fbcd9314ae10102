//! What both Redis recipes share around the servers: owner identities, waiting for
//! notifications, the renewal watchdog, and the lease handle.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::recipe::deadline::drift;
use crate::recipe::{Lease, LostSignal, LostTrigger, Tally};
use crate::service::redis::recipe::Master;
use crate::service::redis::recipe::pubsub::LOOK_AGAIN;
use crate::service::redis::recipe::scripts::Keys;
use crate::service::redis::recipe::server::Server;
use crate::sync::LockUnpoisoned;

/// A fresh client identity: owner values are `<client>:<sequence>`, unique per acquisition, so
/// a stale lease or a stray wake message can never be mistaken for a current one.
pub(crate) fn new_client_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// The owner value of one acquisition: `<client>:<seq>`, and for a claim the queue shares
/// (`queued`: a read, write or permit claim) its word at the end (`-read`, `-write`, `-permit`),
/// so that the scripts read every entry's claim from the queue itself (see `shared.rs`).
pub(crate) fn owner_value(client: &str, seq: u64, queued: Option<crate::recipe::Claim>) -> String {
    match queued {
        Some(claim) => format!("{client}:{seq}-{}", claim.word()),
        None => format!("{client}:{seq}"),
    }
}

/// Whether an owner value is a read or write claim's ([`owner_value`]).
pub(crate) fn is_rwlock_owner(owner: &str) -> bool {
    owner.ends_with("-read") || owner.ends_with("-write")
}

static NEXT_WAITER: AtomicU64 = AtomicU64::new(1);
static NEXT_RELEASE: AtomicU64 = AtomicU64::new(1);

/// The message one release (or give-back) of `owner` publishes: the same on every server it
/// reaches, so a waiter that hears it from several Redlock masters counts one wake-up, and new
/// for every release, so two releases by the same owner count two.
pub(crate) fn wake_message(owner: &str) -> String {
    format!("{owner}/{}", NEXT_RELEASE.fetch_add(1, Ordering::Relaxed))
}

/// What ends a [`queue_prompt`]: a release's message ends with its sequence number instead.
const QUEUE_PROMPT_END: &str = "/queue";

/// The message a queue's own correction publishes, not a release: a take that finalised its
/// ticket behind another waiter or dropped dead entries ahead of it, or a Redlock round that
/// gives back what it won because another waiter is first on some master. It makes another
/// waiter first without any lock being released, so the waiter counts it as a wake-up and, apart,
/// as a queue wake-up ([`Tally::queue_wakeup_count`]).
pub(crate) fn queue_prompt(owner: &str) -> String {
    let n = NEXT_RELEASE.fetch_add(1, Ordering::Relaxed);
    format!("{owner}/{n}{QUEUE_PROMPT_END}")
}

/// The waiting side of one acquisition: notifications from every node arrive on one channel.
pub(crate) struct Waiter {
    pub id: u64,
    pub tx: UnboundedSender<Vec<u8>>,
    rx: UnboundedReceiver<Vec<u8>>,
    seen: HashSet<Vec<u8>>,
    pub wakeups: u64,
    /// Of `wakeups`, those from a [`queue_prompt`].
    pub queue_wakeups: u64,
}

impl Waiter {
    pub fn new() -> Waiter {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        Waiter {
            id: NEXT_WAITER.fetch_add(1, Ordering::Relaxed),
            tx,
            rx,
            seen: HashSet::new(),
            wakeups: 0,
            queue_wakeups: 0,
        }
    }

    /// Waits up to `at_most` for a notification; false when none came. Each distinct message
    /// is one wake-up: the same release heard from several Redlock masters carries the same
    /// payload and wakes once. A prompt to look again after a pub/sub reconnect (`LOOK_AGAIN`)
    /// ends the wait too but is no wake-up: no server sent it.
    pub async fn wait(&mut self, at_most: Duration) -> bool {
        let first = match tokio::time::timeout(at_most, self.rx.recv()).await {
            Ok(Some(m)) => m,
            // Timed out (the fallback poll) or every sender gone: the caller tries again.
            _ => return false,
        };
        self.count(first);
        while let Ok(m) = self.rx.try_recv() {
            self.count(m);
        }
        true
    }

    fn count(&mut self, m: Vec<u8>) {
        if m == LOOK_AGAIN {
            return;
        }
        let prompt = m.ends_with(QUEUE_PROMPT_END.as_bytes());
        if self.seen.insert(m) {
            self.wakeups += 1;
            self.queue_wakeups += u64::from(prompt);
        }
    }

    /// Waits for a notification, for the holder's remaining TTL (`ttl_left`, after which the
    /// lock is free without a release message), or for `poll`, whichever is first; counts a
    /// wait that ended on a [`Poll::Fallback`] alone.
    pub async fn wait_or_poll(
        &mut self,
        poll: Poll,
        ttl_left: Option<Duration>,
        left: Duration,
        tally: &crate::recipe::Tally,
    ) {
        let (interval, counted) = match poll {
            Poll::Fallback(d) => (d, true),
            Poll::Refresh { every, .. } => (every, false),
        };
        let until_free = ttl_left.map(|t| t + Duration::from_millis(1));
        let wait = until_free.map_or(interval, |t| t.min(interval));
        if !self.wait(wait.min(left)).await && counted && wait == interval && wait <= left {
            tally.fallback_poll();
        }
    }
}

/// How long a waiter that hears nothing waits before it asks the server again.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Poll {
    /// A waiter that expects a message any time now (a herd waiter, the first in a queue) and
    /// checks in case it was lost: a fallback poll, counted.
    Fallback(Duration),
    /// A queued waiter with other waiters ahead of it: nothing to hear until it is first, and
    /// becoming first comes with a message (a release, or a dead waiter's entry dropped by
    /// someone's refresh). It asks again only to keep its entry alive ([`entry_refresh`]): not
    /// counted as a fallback poll, though each is a request. `fallback` is the waiter's
    /// fallback poll, for when it cannot hear that message ([`Poll::unheard`]).
    Refresh { every: Duration, fallback: Duration },
}

impl Poll {
    /// The wait after an answer that did not grant: a queue waiter told it is not first
    /// (`queued_behind`) refreshes; everyone else falls back to `cfg.fallback_poll`.
    pub fn after(
        strategy: crate::recipe::Strategy,
        queued_behind: bool,
        cfg: &crate::recipe::RecipeConfig,
    ) -> Poll {
        if strategy == crate::recipe::Strategy::Predecessor && queued_behind {
            Poll::Refresh {
                every: entry_refresh(cfg),
                fallback: cfg.fallback_poll,
            }
        } else {
            Poll::Fallback(cfg.fallback_poll)
        }
    }

    /// The wait of a waiter that no server will tell (no subscription took): the message that
    /// would end a queued wait cannot come, so it asks again at the fallback poll, never later,
    /// and that poll is counted.
    pub fn unheard(self) -> Poll {
        match self {
            Poll::Refresh { every, fallback } => Poll::Fallback(every.min(fallback)),
            fallback => fallback,
        }
    }
}

/// The end of a lock's validity when the request that granted or renewed it was sent at `sent`:
/// the server starts its TTL somewhere within the round trip, so counting from the send (less
/// the drift) never ends later than the server does.
pub(crate) fn valid_until(sent: Instant, ttl: Duration) -> Instant {
    sent + ttl.saturating_sub(drift(ttl))
}

/// Where a watchdog renews: fixed servers (Redlock), or whichever server is the master now.
pub(crate) enum NodeSource {
    Fixed(Vec<Arc<Server>>),
    Master(Arc<Master>),
}

impl NodeSource {
    async fn nodes(&self) -> Vec<Arc<Server>> {
        match self {
            NodeSource::Fixed(v) => v.clone(),
            NodeSource::Master(m) => vec![m.current().await],
        }
    }

    /// A renewal could not reach the master: it may have moved (Sentinel failover). Asks
    /// Sentinel in a task of its own, so a slow answer cannot delay the lost signal.
    fn unreachable(&self, nodes: &[Arc<Server>], deadline: Instant) {
        if let (NodeSource::Master(m), [node]) = (self, nodes) {
            let (m, node) = (m.clone(), node.clone());
            tokio::spawn(async move {
                m.reresolve(&node, deadline).await;
            });
        }
    }
}

/// What a watchdog needs to know about the lock it keeps.
pub(crate) struct Held {
    pub source: NodeSource,
    /// Renewals needed per round (1 for one master, a majority for Redlock).
    pub quorum: usize,
    pub keys: Keys,
    pub owner: String,
    pub ttl: Duration,
    /// When the granting request (or Redlock round) was sent.
    pub granted_at: Instant,
    /// How `release` gives the lock back.
    pub release: ReleaseKind,
}

/// How a lease is given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReleaseKind {
    /// Delete only if the key still holds our owner value (the correct recipes), and leave the
    /// queue (a predecessor holder).
    OwnerChecked,
    /// [`ReleaseKind::OwnerChecked`] for a holder that never queued (the herd): nothing to
    /// leave and no queue head to wake ([`super::scripts::QueueEntry::Never`]).
    Unqueued,
    /// `DEL key` whoever holds it: the `unsafe-del` mistake (see `broken.rs`).
    PlainDel,
    /// A read, write or permit claim: owner-checked, on the queue (see `shared.rs`).
    Shared,
    /// `DECR` the holder count: `unsafe-get-set` (see `broken.rs`), which has no lease to renew.
    CountDecr,
}

impl ReleaseKind {
    /// What an owner-checked release does with the holder's queue entry.
    pub fn queue_entry(self) -> super::scripts::QueueEntry {
        match self {
            ReleaseKind::Unqueued => super::scripts::QueueEntry::Never,
            _ => super::scripts::QueueEntry::Leave,
        }
    }

    /// One watchdog renewal on `node`: true when `owner` still holds (now extended).
    async fn renew(
        self,
        node: &Server,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        limit: Duration,
    ) -> Result<bool, crate::recipe::LockError> {
        match self {
            ReleaseKind::CountDecr => Ok(true),
            _ => {
                node.renew(keys, owner, ttl, self == ReleaseKind::Shared, limit)
                    .await
            }
        }
    }
}

/// Renewal watchdogs of one recipe, so `crash` can stop them all.
#[derive(Default, Clone)]
pub(crate) struct Watchdogs(Arc<Mutex<HashMap<u64, AbortHandle>>>);

impl Watchdogs {
    /// Starts the task that renews the lock every ttl/3 and fires `lost` when it stops being
    /// certainly ours: at the end of its validity (`valid_until` of the grant, then of the
    /// last renewal a quorum applied), or earlier when a quorum says it is someone else's.
    fn start(&self, held: Held, lost: LostTrigger, valid: watch::Sender<Instant>) -> u64 {
        let id = NEXT_WAITER.fetch_add(1, Ordering::Relaxed);
        let map = self.0.clone();
        let task = tokio::spawn(async move {
            keep(held, &valid).await;
            lost.fire();
            map.locked().remove(&id);
        });
        self.0.locked().insert(id, task.abort_handle());
        id
    }

    /// Starts the watchdog of a lock just granted and hands the holder its lease: the validity
    /// window as `ttl`, the attempt's counts, and what release needs.
    pub fn grant(
        &self,
        held: Held,
        renew: bool,
        key: &str,
        token: u64,
        queue_position: Option<u64>,
        tally: &Tally,
    ) -> Lease {
        let (keys, owner, release) = (held.keys.clone(), held.owner.clone(), held.release);
        let valid = valid_until(held.granted_at, held.ttl);
        // Unrenewed, the lease ends at its validity's end and nothing can end it sooner: the
        // signal reads the clock, and no task is spawned (to be woken, then aborted on
        // release: two task switches a cycle, often onto the other worker).
        let (watchdog, lost) = if renew {
            // The holder also reads the validity's end off the clock, moved by each renewal,
            // so a watchdog a loaded machine runs late cannot make the signal late.
            let (trigger, lost) = LostSignal::new();
            let (renewed, until) = watch::channel(valid);
            (
                Some(self.start(held, trigger, renewed)),
                lost.renewed_by(until),
            )
        } else {
            (None, LostSignal::expiring_at(valid))
        };
        let acquired_at = Instant::now();
        Lease {
            key: key.to_string(),
            token,
            acquired_at,
            ttl: valid.saturating_duration_since(acquired_at),
            ttl_spent: Duration::ZERO,
            wakeups: tally.wakeup_count(),
            requests: tally.request_count(),
            fallback_polls: tally.fallback_poll_count(),
            queue_position,
            lost,
            handle: Box::new(RedisHandle {
                keys,
                owner,
                watchdog,
                release,
            }),
        }
    }

    /// Stops a lease's watchdog, if it has one (on release).
    pub fn stop(&self, id: Option<u64>) {
        let Some(id) = id else { return };
        if let Some(h) = self.0.locked().remove(&id) {
            h.abort();
        }
    }

    /// Stops them all (on crash).
    pub fn stop_all(&self) {
        for (_, h) in self.0.locked().drain() {
            h.abort();
        }
    }
}

/// Renews `held` until it is lost, moving `until` to each renewed validity's end; returns at
/// the moment the holder must stop counting on it.
async fn keep(held: Held, until: &watch::Sender<Instant>) {
    let Held {
        source,
        quorum,
        keys,
        owner,
        ttl,
        granted_at,
        release,
    } = held;
    let period = ttl / 3;
    // After a failed round: soon, so a brief outage costs no more validity than it must.
    let retry = (ttl / 20).max(Duration::from_millis(10));
    let mut valid = valid_until(granted_at, ttl);
    let mut next = granted_at + period;
    loop {
        let round = async {
            tokio::time::sleep_until(next.into()).await;
            let sent = Instant::now();
            let nodes = source.nodes().await;
            let answers = futures::future::join_all(
                nodes
                    .iter()
                    .map(|n| release.renew(n, &keys, &owner, ttl, period)),
            )
            .await;
            (sent, nodes, answers)
        };
        // Whatever the servers do (answer late, never), the lease ends at `valid`.
        let Ok((sent, nodes, answers)) = tokio::time::timeout_at(valid.into(), round).await else {
            return;
        };
        if answers
            .iter()
            .any(|a| matches!(a, Err(e) if e.is_retryable()))
        {
            source.unreachable(&nodes, sent + period);
        }
        let renewed = answers.iter().filter(|a| matches!(a, Ok(true))).count();
        let refused = answers.iter().filter(|a| matches!(a, Ok(false))).count();
        if renewed >= quorum {
            valid = valid_until(sent, ttl);
            until.send_replace(valid);
            next = sent + period;
        } else if refused > nodes.len() - quorum {
            return; // not ours on a majority any more
        } else {
            next = Instant::now() + retry;
        }
    }
}

/// How long a queue entry lives without a refresh. A waiter refreshes it on every take attempt,
/// at least every [`entry_refresh`], so only a dead or departed waiter's entry expires.
pub(crate) fn entry_ttl(cfg: &crate::recipe::RecipeConfig) -> Duration {
    cfg.fallback_poll * 3 + cfg.request_timeout * 2
}

/// How often a waiter with others ahead of it refreshes its queue entry: a third of the entry
/// TTL, which leaves the refresh two thirds (at least two request timeouts) to land. A waiter
/// deep in a long queue pays one request per refresh: about wait / refresh of them (see
/// docs/book/src/results-schema.md#what-a-request-is-per-recipe).
pub(crate) fn entry_refresh(cfg: &crate::recipe::RecipeConfig) -> Duration {
    entry_ttl(cfg) / 3
}

/// What a Redis lease keeps for release.
pub(crate) struct RedisHandle {
    pub keys: Keys,
    pub owner: String,
    /// The renewal watchdog's id; none for a lease that is not renewed.
    pub watchdog: Option<u64>,
    pub release: ReleaseKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queued_claim_ends_its_owner_value_with_its_word() {
        use crate::recipe::Claim;
        assert_eq!(owner_value("c1", 7, None), "c1:7");
        assert_eq!(owner_value("c1", 7, Some(Claim::Read)), "c1:7-read");
        let permit = Some(Claim::Permit { permits: 3 });
        assert_eq!(owner_value("c1", 8, permit), "c1:8-permit");
        assert!(is_rwlock_owner("c1:7-read") && is_rwlock_owner("c1:9-write"));
        assert!(!is_rwlock_owner("c1:7") && !is_rwlock_owner("c1:8-permit"));
        // Client ids are hex: the only dash is the claim's.
        assert!(!new_client_id().contains('-'));
    }

    #[tokio::test]
    async fn a_waiter_counts_each_message_once_and_queue_prompts_apart() {
        let mut w = Waiter::new();
        let (release, prompt) = (wake_message("c1:1"), queue_prompt("c1:2"));
        assert!(!release.ends_with(QUEUE_PROMPT_END) && prompt.ends_with(QUEUE_PROMPT_END));
        // One release heard from three Redlock masters, one prompt from two, and a reconnect's
        // prompt to look again, which no server sent.
        for m in [&release, &release, &prompt, &release, &prompt] {
            w.tx.send(m.clone().into_bytes()).unwrap();
        }
        w.tx.send(LOOK_AGAIN).unwrap();
        assert!(w.wait(Duration::from_secs(1)).await);
        assert_eq!((w.wakeups, w.queue_wakeups), (2, 1));
        // A second release by the same owner is a new wake-up.
        w.tx.send(wake_message("c1:1").into_bytes()).unwrap();
        assert!(w.wait(Duration::from_secs(1)).await);
        assert_eq!((w.wakeups, w.queue_wakeups), (3, 1));
    }

    #[test]
    fn validity_counts_from_the_send_less_the_drift() {
        let t = Instant::now();
        assert_eq!(drift(Duration::from_secs(10)), Duration::from_millis(102));
        assert_eq!(
            valid_until(t, Duration::from_secs(2)),
            t + Duration::from_millis(1978)
        );
    }

    /// A server that accepts connections and never answers, as a paused one does.
    async fn black_hole() -> (String, tokio::task::JoinHandle<()>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = l.accept().await {
                held.push(s);
            }
        });
        (addr, task)
    }

    async fn lost_after(renew: bool, ttl: Duration) -> (Instant, Duration, Option<Instant>) {
        let (addr, server) = black_hole().await;
        let node = Arc::new(Server::new(&addr, Duration::from_secs(2), None).unwrap());
        let granted_at = Instant::now();
        let held = Held {
            source: NodeSource::Fixed(vec![node]),
            quorum: 1,
            keys: Keys::new("/t", "k"),
            owner: "o".into(),
            ttl,
            granted_at,
            release: ReleaseKind::OwnerChecked,
        };
        let dogs = Watchdogs::default();
        // Through `grant`, as a recipe does: a renewed lease has a watchdog task, an unrenewed
        // one a signal that reads the clock.
        let mut lost = dogs
            .grant(held, renew, "k", 1, None, &crate::recipe::Tally::default())
            .lost;
        assert!(!lost.is_lost());
        let lost_from = lost.valid_until();
        tokio::time::timeout(ttl * 2, lost.wait())
            .await
            .expect("lost fires");
        let after = granted_at.elapsed();
        assert!(lost.is_lost(), "renew {renew}: lost once fired");
        assert_eq!(
            lost.valid_until(),
            lost_from,
            "renew {renew}: nothing renewed it"
        );
        server.abort();
        (granted_at, after, lost_from)
    }

    #[tokio::test]
    async fn lost_fires_at_the_validity_end_when_the_server_never_answers() {
        // Renewals sent at ttl/3 hang until their own deadline (ttl/3): a watchdog that waits
        // for them before looking at the clock fires a third of the TTL late.
        // The holder counts its lease lost from the validity's end by the clock, whatever the
        // hanging renewals do; when a loaded machine wakes the waiting task is not this test's
        // business (it was 91 ms past the end once, beside two other test binaries).
        let ttl = Duration::from_millis(900);
        for renew in [true, false] {
            let (t, after, lost_from) = lost_after(renew, ttl).await;
            let end = valid_until(t, ttl);
            assert_eq!(
                lost_from,
                Some(end),
                "renew {renew}: lost from the validity's end"
            );
            assert!(
                after >= end - t,
                "renew {renew}: fired early, after {after:?}"
            );
        }
    }
}
