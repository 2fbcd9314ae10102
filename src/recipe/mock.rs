//! An in-memory lock service and its client, so the runner, the checkers and the exporters can
//! be tested end to end without Docker, in milliseconds (as hyperfine tests its scheduler with a
//! mock executor). It is not a system users can pick: no real server is ever replaced by it.
//!
//! Both strategies behave as the real ones do from a client's point of view: the herd wakes
//! every waiter on every release; the predecessor queue wakes only its head. Tokens grow per key.
//! The optional unsafe mode grants every n-th acquisition that finds its key held at once, so
//! a checker can be shown to find violations that are known to be there ([`MockService::planted`]
//! counts them). A crashed client's locks are freed at once (the mock has no TTL).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};

use super::{
    BOTH_STRATEGIES, Claim, Lease, LockError, LostSignal, Recipe, Strategy, Tally, exclusive_only,
};
use crate::sync::LockUnpoisoned;
use crate::system::System;

/// How the mock service behaves.
#[derive(Debug, Clone, Default)]
pub struct MockOptions {
    /// Simulated round trip added to every request.
    pub delay: Duration,
    /// Unsafe mode: every n-th time an acquisition (of any client) finds its key held, it is
    /// granted at once anyway, so each one plants an overlap. `None` (the default) is a correct lock.
    pub overlap_every: Option<u64>,
    /// The lease TTL reported to holders (the mock never expires a lease).
    pub ttl: Duration,
}

/// One in-memory lock service shared by many [`MockRecipe`] clients.
#[derive(Clone, Default)]
pub struct MockService {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    opts: MockOptions,
    state: Mutex<HashMap<String, KeyState>>,
    acquisitions: AtomicU64,
    planted: AtomicU64,
    next_id: AtomicU64,
    faults: Mutex<MockFaults>,
}

/// What faults did to the mock's three pretend servers (the lock itself is unaffected: the
/// mock drives the nemesis and the runner's healing, not a system's behaviour under faults).
/// The runner's mock backend plays the nemesis' calls on them (its `Faultable` impl).
#[derive(Debug, Default)]
pub(crate) struct MockFaults {
    log: Vec<String>,
    pub(crate) killed: BTreeSet<String>,
    pub(crate) paused: BTreeSet<String>,
    pub(crate) partitioned: bool,
}

struct KeyState {
    /// Lease ids holding the key now (more than one only in unsafe mode).
    holders: Vec<u64>,
    /// The last token granted for this key.
    fence: u64,
    /// Predecessor waiters in arrival order, each with its own wake-up.
    queue: VecDeque<(u64, Arc<Notify>)>,
    /// Bumped on every release: herd waiters watch it.
    released: watch::Sender<u64>,
}

impl Default for KeyState {
    fn default() -> Self {
        KeyState {
            holders: Vec::new(),
            fence: 0,
            queue: VecDeque::new(),
            released: watch::channel(0).0,
        }
    }
}

impl MockService {
    /// A service with `opts`.
    pub fn new(opts: MockOptions) -> MockService {
        MockService {
            inner: Arc::new(Inner {
                opts,
                ..Inner::default()
            }),
        }
    }

    /// A new client of this service.
    pub fn client(&self) -> MockRecipe {
        MockRecipe {
            service: self.clone(),
            held: Mutex::new(Vec::new()),
        }
    }

    /// Overlapping pairs the unsafe mode made (a grant while k others held the key counts k):
    /// the violations a checker must find.
    pub fn planted(&self) -> u64 {
        self.inner.planted.load(Ordering::Relaxed)
    }

    /// Every fault call the nemesis made on this service, in order (`kill mock2`, `heal`, ...).
    pub fn fault_log(&self) -> Vec<String> {
        self.inner.faults.locked().log.clone()
    }

    /// Pretend servers killed or paused and not yet restarted or resumed, and whether a
    /// partition is in effect: what a heal left undone.
    pub fn faults_left(&self) -> (Vec<String>, bool) {
        let f = self.inner.faults.locked();
        let down = f.killed.iter().chain(&f.paused).cloned().collect();
        (down, f.partitioned)
    }

    /// The pretend servers: `mock1`..`mock3`.
    pub fn servers(&self) -> Vec<String> {
        (1..=3).map(|i| format!("mock{i}")).collect()
    }

    /// The first pretend server neither killed nor paused: `mock1` leads while it is up.
    pub fn leader(&self) -> Option<String> {
        let f = self.inner.faults.locked();
        self.servers()
            .into_iter()
            .find(|n| !f.killed.contains(n) && !f.paused.contains(n))
    }

    /// Plays one fault call on the pretend servers and adds it to [`MockService::fault_log`].
    pub(crate) fn fault(&self, call: String, change: impl FnOnce(&mut MockFaults)) {
        let mut f = self.inner.faults.locked();
        change(&mut f);
        f.log.push(call);
    }

    fn state(&self) -> MutexGuard<'_, HashMap<String, KeyState>> {
        // A panicking test thread cannot leave the map half-updated: every change is one call.
        self.inner.state.locked()
    }

    fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    async fn round_trip(&self, tally: &Tally) {
        tally.requests(1);
        if !self.inner.opts.delay.is_zero() {
            tokio::time::sleep(self.inner.opts.delay).await;
        }
    }

    /// Asked each time an acquisition finds its key held: true when it is one the unsafe mode
    /// grants regardless. (Counting every acquisition at its start let a schedule where each
    /// n-th one found the key free plant nothing at all.)
    fn forced(&self) -> bool {
        let n = self.inner.acquisitions.fetch_add(1, Ordering::Relaxed) + 1;
        self.inner
            .opts
            .overlap_every
            .is_some_and(|every| n.is_multiple_of(every.max(1)))
    }

    /// Grants `key` to `id` and returns the token.
    fn grant(&self, k: &mut KeyState, id: u64) -> u64 {
        // One planted overlap per holder the new grant joins: a checker counts pairs.
        self.inner
            .planted
            .fetch_add(k.holders.len() as u64, Ordering::Relaxed);
        k.holders.push(id);
        k.fence += 1;
        k.fence
    }

    /// Frees `id`'s hold on `key`; false if it held nothing there.
    fn free(&self, key: &str, id: u64) -> bool {
        let mut st = self.state();
        let Some(k) = st.get_mut(key) else {
            return false;
        };
        let before = k.holders.len();
        k.holders.retain(|h| *h != id);
        if k.holders.len() == before {
            return false;
        }
        k.released.send_modify(|v| *v += 1);
        if let Some((_, head)) = k.queue.front() {
            head.notify_one();
        }
        true
    }
}

/// One client of a [`MockService`].
pub struct MockRecipe {
    service: MockService,
    /// (key, lease id) this client holds, freed by `crash`.
    held: Mutex<Vec<(String, u64)>>,
}

struct Handle {
    id: u64,
}

impl MockRecipe {
    fn lease(&self, key: &str, id: u64, token: u64, queued: Option<u64>, tally: &Tally) -> Lease {
        self.held.locked().push((key.to_string(), id));
        Lease {
            key: key.to_string(),
            token,
            acquired_at: Instant::now(),
            ttl: self.service.inner.opts.ttl,
            ttl_spent: Duration::ZERO,
            wakeups: tally.wakeup_count(),
            requests: tally.request_count(),
            fallback_polls: tally.fallback_poll_count(),
            queue_position: queued,
            lost: LostSignal::new().1,
            handle: Box::new(Handle { id }),
        }
    }

    async fn herd(&self, key: &str, deadline: Instant, tally: &Tally) -> Result<Lease, LockError> {
        let id = self.service.next_id();
        loop {
            self.service.round_trip(tally).await;
            let mut changed = {
                let mut st = self.service.state();
                let k = st.entry(key.to_string()).or_default();
                if k.holders.is_empty() || self.service.forced() {
                    let token = self.service.grant(k, id);
                    drop(st);
                    return Ok(self.lease(key, id, token, None, tally));
                }
                // Subscribed under the lock: a release after this point is seen.
                k.released.subscribe()
            };
            match tokio::time::timeout_at(deadline.into(), changed.changed()).await {
                Ok(_) => tally.wakeups(1),
                Err(_) => return Err(timeout(key, deadline)),
            }
        }
    }

    async fn queue(&self, key: &str, deadline: Instant, tally: &Tally) -> Result<Lease, LockError> {
        let id = self.service.next_id();
        let wake = Arc::new(Notify::new());
        self.service.round_trip(tally).await;
        {
            let mut st = self.service.state();
            let k = st.entry(key.to_string()).or_default();
            if !k.holders.is_empty() && self.service.forced() {
                let token = self.service.grant(k, id);
                drop(st);
                return Ok(self.lease(key, id, token, Some(id), tally));
            }
            k.queue.push_back((id, wake.clone()));
        }
        let mut woken = false;
        loop {
            if woken {
                self.service.round_trip(tally).await;
            }
            {
                let mut st = self.service.state();
                let k = st.entry(key.to_string()).or_default();
                let head = k.queue.front().map(|(h, _)| *h);
                if head == Some(id) && k.holders.is_empty() {
                    k.queue.pop_front();
                    let token = self.service.grant(k, id);
                    drop(st);
                    return Ok(self.lease(key, id, token, Some(id), tally));
                }
            }
            match tokio::time::timeout_at(deadline.into(), wake.notified()).await {
                Ok(()) => {
                    tally.wakeups(1);
                    woken = true;
                }
                Err(_) => {
                    let mut st = self.service.state();
                    if let Some(k) = st.get_mut(key) {
                        k.queue.retain(|(w, _)| *w != id);
                        // We may have been the head a release woke: pass the turn on.
                        if k.holders.is_empty()
                            && let Some((_, next)) = k.queue.front()
                        {
                            next.notify_one();
                        }
                    }
                    return Err(timeout(key, deadline));
                }
            }
        }
    }
}

fn timeout(key: &str, deadline: Instant) -> LockError {
    LockError::Timeout {
        key: key.to_string(),
        waited: deadline.elapsed(),
    }
}

impl Recipe for MockRecipe {
    fn system(&self) -> System {
        // The runner labels cells with the system of its plan; the mock stands in for any.
        System::Redis
    }

    fn strategies(&self) -> &'static [Strategy] {
        &BOTH_STRATEGIES
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        exclusive_only(self.system(), claim)?;
        match strategy {
            Strategy::Herd => self.herd(key, deadline, tally).await,
            Strategy::Predecessor => self.queue(key, deadline, tally).await,
            _ => Err(LockError::Unsupported {
                system: self.system(),
                strategy,
                valid: "herd, predecessor".into(),
            }),
        }
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let h = super::own_handle::<Handle>(lease.handle, &lease.key, self.system())?;
        let tally = Tally::default();
        self.service.round_trip(&tally).await;
        self.held.locked().retain(|(_, id)| *id != h.id);
        if self.service.free(&lease.key, h.id) {
            Ok(())
        } else {
            Err(LockError::Lost {
                key: lease.key,
                why: "the mock no longer counts this lease as a holder".into(),
            })
        }
    }

    async fn crash(self) {
        let held = std::mem::take(&mut *self.held.locked());
        for (key, id) in held {
            self.service.free(&key, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn one_holder_at_a_time_and_tokens_grow() {
        for s in BOTH_STRATEGIES {
            let svc = MockService::new(MockOptions::default());
            let (a, b) = (svc.client(), svc.client());
            let la = a.acquire("k", s, far()).await.unwrap();
            let short = Instant::now() + Duration::from_millis(30);
            assert!(matches!(
                b.acquire("k", s, short).await,
                Err(LockError::Timeout { .. })
            ));
            let waiting = tokio::spawn(async move {
                let l = b.acquire("k", s, far()).await.unwrap();
                (b, l)
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
            let t = la.token;
            a.release(la).await.unwrap();
            let (b, lb) = waiting.await.unwrap();
            assert!(lb.token > t, "{s}: tokens grow");
            assert_eq!(lb.wakeups, Some(1), "{s}: one release, one wake-up");
            b.release(lb).await.unwrap();
            assert_eq!(svc.planted(), 0);
        }
    }

    #[tokio::test]
    async fn herd_wakes_everyone_predecessor_only_the_head() {
        for (s, want) in [(Strategy::Herd, 3), (Strategy::Predecessor, 1)] {
            let svc = MockService::new(MockOptions::default());
            let holder = svc.client();
            let lease = holder.acquire("k", s, far()).await.unwrap();
            let mut waiters = Vec::new();
            for _ in 0..3 {
                let c = svc.client();
                waiters.push(tokio::spawn(async move {
                    let tally = Tally::default();
                    let l = c.acquire_counted("k", s, far(), &tally).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    c.release(l).await.unwrap();
                    tally.wakeup_count().unwrap()
                }));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            holder.release(lease).await.unwrap();
            let mut wakeups = Vec::new();
            for w in waiters {
                wakeups.push(w.await.unwrap());
            }
            wakeups.sort();
            // Herd: the waiter served last heard all three releases; predecessor: one each.
            assert_eq!(*wakeups.last().unwrap(), want, "{s}: {wakeups:?}");
        }
    }

    #[tokio::test]
    async fn unsafe_mode_plants_counted_overlaps() {
        // Every acquisition that finds the key held is granted anyway.
        let svc = MockService::new(MockOptions {
            overlap_every: Some(1),
            ..MockOptions::default()
        });
        let (a, b) = (svc.client(), svc.client());
        let la = a.acquire("k", Strategy::Herd, far()).await.unwrap();
        let lb = b.acquire("k", Strategy::Herd, far()).await.unwrap();
        assert_eq!(
            svc.planted(),
            1,
            "the second acquisition overlapped the first"
        );
        assert!(lb.token > la.token);
        a.release(la).await.unwrap();
        b.release(lb).await.unwrap();
    }

    #[tokio::test]
    async fn a_crashed_client_frees_its_locks_and_a_stale_release_is_lost() {
        let svc = MockService::new(MockOptions::default());
        let a = svc.client();
        let la = a.acquire("k", Strategy::Predecessor, far()).await.unwrap();
        let b = svc.client();
        let lb_task = tokio::spawn(async move {
            let l = b.acquire("k", Strategy::Predecessor, far()).await.unwrap();
            (b, l)
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let stale = svc.client();
        // A lease handed to another client of the service: its release finds no hold.
        let lc = stale.lease("k", 999, 0, None, &Tally::default());
        assert!(matches!(
            stale.release(lc).await,
            Err(LockError::Lost { .. })
        ));
        std::mem::forget(la); // the holder dies without releasing
        a.crash().await;
        let (b, lb) = lb_task.await.unwrap();
        assert_eq!(lb.token, 2, "the waiter took over from the crashed holder");
        b.release(lb).await.unwrap();
    }
}
