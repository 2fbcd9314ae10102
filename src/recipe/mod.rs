//! Lock recipes: how a client takes and gives back a lock on each system, under the two waiting
//! strategies the suite compares (and etcd's server-side lock as a third). Redis also offers two
//! textbook mistakes as `unsafe-*` strategies, for calibrating the safety checkers: they run only
//! when named, never in the default comparison.
//!
//! One recipe value is one client: one ZooKeeper session, one etcd lease, one Redis connection
//! set. Contention is many recipe values on the same key. Each system's recipe lives in its
//! `service/<name>/` folder (`recipe.rs`, or `recipe/` when it takes several files; Redlock's
//! `recipe.rs` runs the scripts and connections of `service/redis/recipe/`), beside the service
//! that connects it; its strategies ([`Strategy`], named in [`crate::strategy`]) live side by
//! side there, so the difference is visible in one place. This module holds what every recipe
//! shares: the [`Recipe`] trait and its errors, claims, deadlines, retries, the janitor,
//! re-entry and the mock. [`AnyRecipe`] holds a client of any system.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::system::System;

mod any;
pub mod claim;
mod credentials;
pub(crate) mod deadline;
pub(crate) mod holders;
pub mod inject;
pub(crate) mod janitor;
pub mod mock;
pub mod reentry;
pub mod retry;

pub use any::AnyRecipe;
pub(crate) use any::CONNECT_TIMEOUT;
pub use claim::{Claim, Turn};
pub use credentials::{ClientTls, Credentials};
pub(crate) use deadline::drift;
pub use retry::RetryPolicy;

pub use crate::strategy::{ALL_STRATEGIES, BOTH_STRATEGIES, Strategy, UNSAFE_LABEL};

/// Tells a holder that its lock may no longer be its own (session expired, lease revoked or not
/// renewed in time, connection lost while holding). Cheap to clone; once lost, stays lost.
#[derive(Debug, Clone)]
pub struct LostSignal {
    /// Fired by the recipe's background task; none where nothing can fire it.
    fired: Option<tokio::sync::watch::Receiver<bool>>,
    /// Lost at this instant whether or not anyone fires it: a lease nobody renews ends at
    /// its validity's end, a clock reading, with no task to wake for it.
    expires: Option<Instant>,
    /// Lost from this instant on unless a renewal moves it later (etcd: the last acknowledged
    /// renewal's send + TTL − drift). A clock reading too: a holder asking after it is told,
    /// however late a loaded machine runs the task that would fire the signal.
    renewed_until: Option<tokio::sync::watch::Receiver<Instant>>,
}

/// The sending half of a [`LostSignal`], kept by the recipe's background tasks.
#[derive(Debug, Clone)]
pub struct LostTrigger(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl LostSignal {
    /// A fresh signal and its trigger.
    pub fn new() -> (LostTrigger, LostSignal) {
        let (tx, fired) = tokio::sync::watch::channel(false);
        let signal = LostSignal {
            fired: Some(fired),
            expires: None,
            renewed_until: None,
        };
        (LostTrigger(std::sync::Arc::new(tx)), signal)
    }
    /// The same signal, lost also once the instant `until` holds has passed (see
    /// [`LostSignal::valid_until`]).
    pub fn renewed_by(mut self, until: tokio::sync::watch::Receiver<Instant>) -> LostSignal {
        self.renewed_until = Some(until);
        self
    }
    /// A signal that is lost from `at` on and never before (no trigger: nothing else can lose
    /// it), for a lease that is not renewed.
    pub fn expiring_at(at: Instant) -> LostSignal {
        LostSignal {
            fired: None,
            expires: Some(at),
            renewed_until: None,
        }
    }
    /// True once the lease is known lost.
    pub fn is_lost(&self) -> bool {
        self.fired.as_ref().is_some_and(|f| *f.borrow())
            || self.valid_until().is_some_and(|at| Instant::now() >= at)
    }
    /// The instant from which the lease counts as lost by the clock alone, whether or not the
    /// signal fired: the earlier of a fixed expiry and the renewed one; `None` where only a
    /// fired signal ends it.
    pub fn valid_until(&self) -> Option<Instant> {
        earlier(
            self.expires,
            self.renewed_until.as_ref().map(|r| *r.borrow()),
        )
    }
    /// Resolves when the lease is lost (never, if it is released first and the trigger dropped
    /// and it has no expiry).
    pub async fn wait(&mut self) {
        let fired = async {
            let fired = match &mut self.fired {
                Some(f) => f.wait_for(|lost| *lost).await.is_ok(),
                None => false,
            };
            if !fired {
                std::future::pending::<()>().await;
            }
        };
        let expires = self.expires;
        let renewed_until = self.renewed_until.clone();
        let by_clock = async move {
            let mut renewed_until = renewed_until;
            loop {
                let renewed = renewed_until.as_mut().map(|r| *r.borrow_and_update());
                let Some(at) = earlier(expires, renewed) else {
                    return std::future::pending().await;
                };
                let moved = async {
                    let changed = match renewed_until.as_mut() {
                        Some(r) => r.changed().await.is_ok(),
                        None => false,
                    };
                    if !changed {
                        // No renewal can move it any more: only the clock is left.
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    () = tokio::time::sleep_until(at.into()) => return,
                    () = moved => {}
                }
            }
        };
        tokio::select! {
            () = fired => {}
            () = by_clock => {}
        }
    }
}

/// The earlier of two instants where either may be absent.
fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl LostTrigger {
    /// Marks the lease lost; every clone of the signal sees it.
    pub fn fire(&self) {
        self.0.send_replace(true);
    }
}

/// What one acquisition cost, whatever its outcome: the recipe counts into it as it goes and the
/// caller reads it after `acquire_counted` returns, so the wake-ups and requests of a waiter
/// that timed out are counted too (the herd is at its worst exactly there).
#[derive(Debug, Default)]
pub struct Tally {
    wakeups: AtomicU64,
    requests: AtomicU64,
    fallback_polls: AtomicU64,
    queue_wakeups: AtomicU64,
    wakeups_hidden: AtomicBool,
    requests_hidden: AtomicBool,
}

impl Tally {
    /// `n` notifications arrived (useful or not).
    pub fn wakeups(&self, n: u64) {
        self.wakeups.fetch_add(n, Ordering::Relaxed);
    }
    /// Of the wake-ups, `n` came from a queue correcting itself, not from a release: a waiter
    /// made first because another gave back a partial Redlock grant, finalised its ticket
    /// behind it, or dropped dead entries ahead of it (the Redis recipes' queues); a waiter on
    /// ZooKeeper or etcd woken by the one ahead of it leaving, and still behind another after
    /// it (that one left without the lock passing: it gave up, or its session or lease ended).
    /// The herd's wake-ups are never counted here.
    pub fn queue_wakeups(&self, n: u64) {
        self.queue_wakeups.fetch_add(n, Ordering::Relaxed);
    }
    /// `n` server round trips were sent.
    pub fn requests(&self, n: u64) {
        self.requests.fetch_add(n, Ordering::Relaxed);
    }
    /// A waiter heard nothing for a whole fallback interval and checked anyway.
    pub fn fallback_poll(&self) {
        self.fallback_polls.fetch_add(1, Ordering::Relaxed);
    }
    /// This client cannot see its wake-ups (they happen on the server): report them as absent.
    pub fn hide_wakeups(&self) {
        self.wakeups_hidden.store(true, Ordering::Relaxed);
    }
    /// Wake-ups so far, `None` where the client cannot see them.
    pub fn wakeup_count(&self) -> Option<u64> {
        (!self.wakeups_hidden.load(Ordering::Relaxed)).then(|| self.wakeups.load(Ordering::Relaxed))
    }
    /// Wake-ups so far that a queue's correction sent ([`Tally::queue_wakeups`]), counted in
    /// [`Tally::wakeup_count`] too.
    pub fn queue_wakeup_count(&self) -> u64 {
        self.queue_wakeups.load(Ordering::Relaxed)
    }
    /// This client cannot tell how many server requests it sent (a library's driver that
    /// does not say): report them as absent, never as zero.
    pub fn hide_requests(&self) {
        self.requests_hidden.store(true, Ordering::Relaxed);
    }
    /// Requests so far.
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Requests so far, `None` where the client cannot tell ([`Tally::hide_requests`]).
    pub fn shown_request_count(&self) -> Option<u64> {
        (!self.requests_hidden.load(Ordering::Relaxed)).then(|| self.request_count())
    }
    /// Fallback polls so far.
    pub fn fallback_poll_count(&self) -> u64 {
        self.fallback_polls.load(Ordering::Relaxed)
    }
}

/// A held lock.
pub struct Lease {
    /// The lock's key, as passed to `acquire`.
    pub key: String,
    /// Fencing token: grows with every grant of this key (zxid, create revision, INCR counter).
    pub token: u64,
    /// When `acquire` saw the grant.
    pub acquired_at: Instant,
    /// What the holder may count on from the grant: the session timeout (ZooKeeper), the
    /// granted lease TTL (etcd), or for Redis and Redlock the validity window (TTL minus the
    /// acquiring round trip minus the drift allowance of 1 % of the TTL + 2 ms).
    pub ttl: Duration,
    /// How much of `ttl` the server had already counted at the grant: etcd keeps a lease a TTL
    /// from the last renewal it acknowledged, sent before the grant, so its holder is overtaken
    /// that much sooner than a TTL after the grant. Zero where the count starts at the grant.
    /// The history's `ttl_ms` is `ttl` less this; `ttl` stays what the holder's warning counts
    /// against.
    pub ttl_spent: Duration,
    /// Notifications received while waiting, useful or not: the herd, counted. `None` where the
    /// client cannot see them (etcd's server-side Lock wakes its waiters on the server).
    pub wakeups: Option<u64>,
    /// Server round trips the acquisition took.
    pub requests: u64,
    /// Checks made because no notification came within the fallback poll interval; a working
    /// wake-up path keeps this near zero.
    pub fallback_polls: u64,
    /// Predecessor strategies: the position the waiter took in the queue (sequence number, create
    /// revision, ticket), so grant order can be checked against queue order. `None` for herd.
    pub queue_position: Option<u64>,
    /// Fires when the lock is known lost while held.
    pub lost: LostSignal,
    /// Recipe-specific state needed to release (node path, key and lease id, owner value, ...).
    pub(crate) handle: Box<dyn Any + Send + Sync>,
}

#[cfg(test)]
impl Lease {
    /// A lease of `key` with token 7 and a 10 s TTL, for unit tests of what reads one.
    pub(crate) fn for_test(key: &str, lost: LostSignal) -> Lease {
        Lease {
            key: key.into(),
            token: 7,
            acquired_at: Instant::now(),
            ttl: Duration::from_secs(10),
            ttl_spent: Duration::ZERO,
            wakeups: None,
            requests: 1,
            fallback_polls: 0,
            queue_position: None,
            lost,
            handle: Box::new(()),
        }
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("key", &self.key)
            .field("token", &self.token)
            .field("ttl", &self.ttl)
            .field("ttl_spent", &self.ttl_spent)
            .field("wakeups", &self.wakeups)
            .field("requests", &self.requests)
            .field("fallback_polls", &self.fallback_polls)
            .field("queue_position", &self.queue_position)
            .field("lost", &self.lost.is_lost())
            .finish()
    }
}

/// Why a lock operation did not succeed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LockError {
    /// The deadline passed; nothing this attempt created is left on the server.
    #[error("timed out acquiring '{key}' after {waited:?}")]
    Timeout { key: String, waited: Duration },
    /// The lease was lost before the operation (release of an expired lock, session expired).
    #[error("lease on '{key}' was lost: {why}")]
    Lost { key: String, why: String },
    /// This system does not offer this strategy.
    #[error("{system} has no '{strategy}' strategy: valid strategies for it are {valid}")]
    Unsupported {
        system: System,
        strategy: Strategy,
        valid: String,
    },
    /// This system's recipe has no lock of this kind (see the guide's lock kinds table).
    #[error(
        "{system} has no '{claim}' lock: the guide's lock kinds table \
         (docs/book/src/workloads.md#lock-kinds) says which systems offer it"
    )]
    KindUnsupported { system: System, claim: &'static str },
    /// The outcome is unknown: a connection dropped or a request timed out mid-flight.
    #[error("connection problem: {0}")]
    Connection(String),
    /// The server refused the request.
    #[error("server error: {0}")]
    Server(String),
    /// A request's outcome was unknown (as [`LockError::Connection`]), then the attempt gave
    /// back everything it may have created and the server confirmed the give-back, or nothing
    /// that could hold the lock was ever written: this client certainly does not hold the lock,
    /// now or later. A definite failure, not an unknown one.
    #[error("withdrawn from '{key}': {why}")]
    Withdrawn { key: String, why: String },
    /// The cluster could not take the request and certainly did not apply it: no leader, a
    /// connection refused, a read-only or loading Redis. Retried with backoff within the
    /// operation's deadline; it reaches a caller only when no time was left.
    #[error("cluster unavailable: {0}")]
    Unavailable(String),
}

impl LockError {
    /// True when the server may or may not have applied the operation (Jepsen's `info`).
    pub fn is_indeterminate(&self) -> bool {
        matches!(self, LockError::Connection(_))
    }

    /// True when asking again may succeed (see [`retry`]): the cluster was unreachable or
    /// without a leader, or the request went unanswered. Timeouts, lost leases, refusals and
    /// withdrawals are answers, not reasons to retry.
    pub fn is_retryable(&self) -> bool {
        matches!(self, LockError::Connection(_) | LockError::Unavailable(_))
    }
}

/// Timing parameters shared by every recipe; none of them is a constant in the recipes.
/// Serialisable, so a worker process connects its clients with the runner's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecipeConfig {
    /// Lease TTL (etcd, Redis, Redlock) or session timeout (ZooKeeper).
    pub ttl: Duration,
    /// Keep the lock alive while held (etcd keep-alive, Redis watchdog at ttl/3). ZooKeeper
    /// sessions always heartbeat.
    pub renew: bool,
    /// Deadline for one request to one server.
    pub request_timeout: Duration,
    /// Namespace for every key this client touches, so runs and cells never collide.
    pub prefix: String,
    /// Upper bound between two checks of a herd waiter that heard nothing (guards against a lost
    /// notification; not the wake-up path).
    pub fallback_poll: Duration,
    /// Simulated client crashes for acquisitions made of more than one step: every N-th
    /// acquisition of each client (recipe value) dies between its steps, as a process killed
    /// there would, and returns [`LockError::Connection`] (an unknown outcome) with whatever the
    /// first step left on the server. 0 = never. Only `unsafe-setnx-expire` has such a gap
    /// (between `SETNX` and `PEXPIRE`); every other recipe takes the lock in one atomic step
    /// and ignores this.
    #[serde(default)]
    pub crash_between_steps_every: u32,
    /// The backoff between two tries after a retryable error ([`LockError::is_retryable`]).
    #[serde(default)]
    pub retry: RetryPolicy,
    /// How long past its deadline an acquisition whose outcome is unknown keeps asking the
    /// cluster what became of it (the drain): until the server confirms that nothing of the
    /// attempt is left, or shows it was granted. Past it, the outcome stays unknown (`info`).
    #[serde(default = "default_resolve_timeout")]
    pub resolve_timeout: Duration,
    /// How often a waiter with no notification to wait for tries again: the herd of the
    /// stores that have none (MariaDB's `GET_LOCK(name, 0)`, Memcached's `add`) polls at this
    /// pace, and counts every poll as a wake-up.
    #[serde(default = "default_poll_interval")]
    pub poll_interval: Duration,
    /// The user and password to log in with, when the cluster asks for them (a target's
    /// `[auth]`); `None` on the clusters lockbench starts.
    #[serde(default)]
    pub credentials: Option<Credentials>,
}

/// The default of [`RecipeConfig::poll_interval`] (and the workload's `poll_interval`).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(10);

fn default_poll_interval() -> Duration {
    DEFAULT_POLL_INTERVAL
}

/// The default of [`RecipeConfig::resolve_timeout`] (and the workload's `resolve_timeout`):
/// long enough to outlast a 30 s partition that starts when an acquisition does.
pub const DEFAULT_RESOLVE_TIMEOUT: Duration = Duration::from_secs(30);

fn default_resolve_timeout() -> Duration {
    DEFAULT_RESOLVE_TIMEOUT
}

impl Default for RecipeConfig {
    fn default() -> Self {
        RecipeConfig {
            ttl: Duration::from_secs(10),
            renew: true,
            request_timeout: Duration::from_secs(2),
            prefix: "/lockbench".to_string(),
            fallback_poll: Duration::from_millis(500),
            crash_between_steps_every: 0,
            retry: RetryPolicy::default(),
            resolve_timeout: DEFAULT_RESOLVE_TIMEOUT,
            poll_interval: DEFAULT_POLL_INTERVAL,
            credentials: None,
        }
    }
}

/// A lock client for one system.
///
/// Contract: at most one holder per key at a time while leases are honoured; a release by a
/// non-owner (a stale lease) never removes another client's lock; an acquire that fails or times
/// out leaves nothing behind on the server.
pub trait Recipe: Send + Sync + 'static {
    /// The system this client talks to.
    fn system(&self) -> System;

    /// The strategies this recipe implements: its system's, from [`crate::system::Facts`].
    fn strategies(&self) -> &'static [Strategy] {
        self.system().strategies()
    }

    /// Waits until `deadline` for `claim` on `key` under `strategy`: the whole lock, a
    /// read-write lock's read or write side, or one of a semaphore's permits, granted by
    /// [`claim::turn`]'s rule. Counts wake-ups, requests and fallback polls into `tally`
    /// whatever the outcome; on success the lease carries the fencing token and the same
    /// counts. A recipe without such a lock answers [`LockError::KindUnsupported`] at once,
    /// touching no server ([`exclusive_only`]).
    fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> impl std::future::Future<Output = Result<Lease, LockError>> + Send;

    /// [`Recipe::acquire_claim`] of the whole lock (a mutex's, a reentrant lock's outer hold).
    fn acquire_counted(
        &self,
        key: &str,
        strategy: Strategy,
        deadline: Instant,
        tally: &Tally,
    ) -> impl std::future::Future<Output = Result<Lease, LockError>> + Send {
        self.acquire_claim(key, strategy, Claim::Exclusive, deadline, tally)
    }

    /// [`Recipe::acquire_counted`] for a caller that needs no counts of a failed attempt.
    fn acquire(
        &self,
        key: &str,
        strategy: Strategy,
        deadline: Instant,
    ) -> impl std::future::Future<Output = Result<Lease, LockError>> + Send {
        async move {
            let tally = Tally::default();
            self.acquire_counted(key, strategy, deadline, &tally).await
        }
    }

    /// Gives the lock back. Releasing a lease that was lost (expired and maybe re-granted) does
    /// not touch the current holder's lock and returns [`LockError::Lost`] or `Ok`.
    fn release(
        &self,
        lease: Lease,
    ) -> impl std::future::Future<Output = Result<(), LockError>> + Send;

    /// Whether a grant's [`Lease::token`] is a fencing token the lock service gave. A client
    /// whose library exposes none answers false, and its grants are recorded without a token.
    fn has_tokens(&self) -> bool {
        true
    }

    /// Called by the client loop while holding `lease`, right before it reads or writes the
    /// protected register; the access is made when this returns `Ok`, and skipped otherwise.
    /// Lockbench's recipes access at once (the default); a library driver asks its process, so
    /// a paused driver accesses late, as a paused application would.
    fn before_access(
        &self,
        lease: &Lease,
        op: crate::resource::AccessOp,
    ) -> impl std::future::Future<Output = Result<(), LockError>> + Send {
        let _ = (lease, op);
        async { Ok(()) }
    }

    /// Drops every connection and background task without releasing anything, as a crashed
    /// process would: locks it held stay until their TTL or session timeout ends them.
    fn crash(self) -> impl std::future::Future<Output = ()> + Send;

    /// Ends the client as an application that shuts down cleanly does, once it holds nothing:
    /// what the server keeps for it (an etcd lease) is given back, so nothing it sent that the
    /// server commits late (an attempt's put given up on) can outlive the client. Bounded by
    /// one request deadline; a cluster that does not answer leaves it as [`Recipe::crash`]
    /// does. The default is `crash`: a session that ends with the connection, or keys that
    /// carry their own TTL, leave nothing more to give back.
    fn close(self) -> impl std::future::Future<Output = ()> + Send
    where
        Self: Sized,
    {
        self.crash()
    }
}

/// For a recipe that has the whole lock only: refuses any other claim with
/// [`LockError::KindUnsupported`], before any request.
pub fn exclusive_only(system: System, claim: Claim) -> Result<(), LockError> {
    match claim {
        Claim::Exclusive => Ok(()),
        _ => Err(LockError::KindUnsupported {
            system,
            claim: claim.word(),
        }),
    }
}

/// Recovers a recipe's own release state from a lease's handle, or says the lease came from a
/// different recipe (a programming error the caller can fix by releasing with the acquirer).
pub(crate) fn own_handle<T: Any + Send + Sync>(
    handle: Box<dyn Any + Send + Sync>,
    key: &str,
    system: System,
) -> Result<Box<T>, LockError> {
    handle.downcast::<T>().map_err(|_| {
        LockError::Server(format!(
            "lease for '{key}' was not issued by the {system} recipe: release it with the recipe that acquired it"
        ))
    })
}

/// Checks that `system` offers `strategy` (see [`crate::system::Facts`]), with the error users
/// see.
pub fn check_strategy(system: System, strategy: Strategy) -> Result<(), LockError> {
    if system.strategies().contains(&strategy) {
        Ok(())
    } else {
        Err(unsupported(system, strategy))
    }
}

/// The error for a strategy `system` does not offer, listing the ones it does.
pub(crate) fn unsupported(system: System, strategy: Strategy) -> LockError {
    LockError::Unsupported {
        system,
        strategy,
        valid: system.strategies_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse_and_reject_unknown() {
        assert_eq!("Herd".parse::<Strategy>(), Ok(Strategy::Herd));
        assert!(
            "fair"
                .parse::<Strategy>()
                .unwrap_err()
                .contains("herd, predecessor")
        );
        let e = check_strategy(System::Redis, Strategy::Native).unwrap_err();
        assert!(e.to_string().contains("herd, predecessor"));
    }

    #[test]
    fn unsafe_strategies_are_named_labelled_and_redis_and_memcached_only() {
        for (text, st) in [
            ("unsafe-del", Strategy::UnsafeDel),
            ("UNSAFE-SETNX-EXPIRE", Strategy::UnsafeSetnxExpire),
            ("unsafe-get-set", Strategy::UnsafeGetSet),
        ] {
            assert_eq!(text.parse::<Strategy>(), Ok(st));
            assert!(st.is_unsafe() && st.name().starts_with("unsafe-"));
            assert_eq!(
                st.labelled(),
                format!("{} (unsafe, for calibration)", st.name())
            );
            // Files and cell.json spell it as flags do.
            assert_eq!(
                serde_json::to_string(&st).unwrap(),
                format!("\"{}\"", st.name())
            );
            assert_eq!(
                serde_json::from_str::<Strategy>(&format!("\"{}\"", st.name())).unwrap(),
                st
            );
            assert!(check_strategy(System::Redis, st).is_ok());
            // Memcached offers the plain-delete release, the one its `add` lock can get wrong.
            let on_memcached = check_strategy(System::Memcached, st).is_ok();
            assert_eq!(on_memcached, st == Strategy::UnsafeDel, "{st}");
            for other in [System::Zookeeper, System::Etcd, System::Redlock] {
                let e = check_strategy(other, st).unwrap_err().to_string();
                assert!(e.contains(&format!("no '{}' strategy", st.name())), "{e}");
            }
        }
        // MariaDB's calibration: its session-owned lock shared by the process's clients.
        let shared = Strategy::UnsafeSharedSession;
        assert_eq!("unsafe-shared-session".parse::<Strategy>(), Ok(shared));
        assert!(shared.is_unsafe());
        assert_eq!(shared.for_kinds(), Some(&["mutex"][..]));
        for system in crate::system::ALL_SYSTEMS {
            assert_eq!(
                check_strategy(system, shared).is_ok(),
                system == System::Mariadb,
                "{system}"
            );
        }
        assert!(BOTH_STRATEGIES.iter().all(|s| !s.is_unsafe()));
        assert!(!Strategy::Native.is_unsafe());
        assert!("unsafe".parse::<Strategy>().unwrap_err().contains(
            "unsafe-del (redis and memcached; unsafe, for calibration), unsafe-setnx-expire \
                 and unsafe-get-set (redis only; unsafe, for calibration), \
                 unsafe-writer-skips-readers (zookeeper only; unsafe, for calibration) and \
                 unsafe-shared-session (mariadb only"
        ));
    }

    #[test]
    fn crash_setting_travels_to_workers_and_defaults_to_never() {
        let cfg = RecipeConfig {
            crash_between_steps_every: 20,
            ..RecipeConfig::default()
        };
        let json = serde_json::to_string(&cfg).unwrap();
        assert!(json.contains("\"crash_between_steps_every\":20"), "{json}");
        assert_eq!(serde_json::from_str::<RecipeConfig>(&json).unwrap(), cfg);
        // A setup written without the field (an older runner) means never.
        let old = json.replace(",\"crash_between_steps_every\":20", "");
        assert_ne!(old, json);
        let back: RecipeConfig = serde_json::from_str(&old).unwrap();
        assert_eq!(back.crash_between_steps_every, 0);
        assert_eq!(RecipeConfig::default().crash_between_steps_every, 0);
    }

    #[tokio::test]
    async fn lost_signal_fires_for_every_clone() {
        let (trigger, mut sig) = LostSignal::new();
        let other = sig.clone();
        assert!(!sig.is_lost());
        trigger.fire();
        sig.wait().await;
        assert!(other.is_lost());
    }

    #[tokio::test]
    async fn an_expiring_signal_is_lost_at_its_instant_and_not_before() {
        let at = Instant::now() + Duration::from_millis(80);
        let mut sig = LostSignal::expiring_at(at);
        let other = sig.clone();
        assert!(!sig.is_lost());
        sig.wait().await;
        assert!(Instant::now() >= at, "resolved before its instant");
        assert!(sig.is_lost() && other.is_lost());
        // Once lost, a wait returns at once.
        tokio::time::timeout(Duration::from_millis(500), sig.wait())
            .await
            .expect("a lost signal stays lost");
    }
}
