//! The Memcached lock: `add` with a TTL on the server the lock key hashes to.
//!
//! - **herd**: `ms <key> <len> T<ttl> ME` (store only if absent) with a value unique to the
//!   acquisition (`<client>:<seq>`). On `NS` the waiter polls again every
//!   [`RecipeConfig::poll_interval`], counting each poll as a wake-up and a request, until its
//!   deadline. There is no **predecessor** strategy: Memcached has no notifications (no
//!   pub/sub, no watches, no blocking read) to wake one waiter with, and no ordered structure
//!   (no sorted set, no sequential node, no list to pop) to queue waiters in; a client-side
//!   queue of keys would have to be polled too, and its entries could not be removed
//!   atomically with the lock. Every waiter polls, so the herd is the only strategy, paced by
//!   the poll interval rather than by releases.
//! - **Fencing**: after the grant, `ma <key>:fence N0 J1 v` increments a counter beside the
//!   lock key, on the same server; its value is the lease's token. Memcached keeps nothing on
//!   disk: a restarted server has forgotten the counter, which starts again at 1, so tokens go
//!   backwards after a restart (a real finding, which the fencing checker sees).
//! - **Loss signal**: with `renew`, a watchdog extends the key every ttl/3 with an
//!   owner-checked CAS write (`mg <key> v c t`, then `ms <key> ... C<cas> T<ttl>` if the value
//!   is ours); a renewal that finds the key gone or someone else's, or that cannot renew
//!   before the validity ends, fires the [`LostSignal`]. Without `renew` it fires when the
//!   validity ends.
//! - **Release**: owner-checked, `mg` (value and CAS), then `md <key> C<cas>` only if the
//!   value is ours: a compare-and-delete that never removes another client's lock.
//!   `unsafe-del` (unsafe, for calibration) releases with a plain `md <key>`.
//!
//! **Second-granularity TTLs.** Memcached counts TTLs in whole seconds on a clock that ticks
//! once a second, so an item stored with `T<n>` lives between n − 1 and n seconds. The key is
//! stored with `T<⌈ttl⌉ + 1>`: the holder can count on at least the configured TTL (its
//! validity window starts at the send of the granting request, less the 1 % + 2 ms drift
//! allowance every recipe takes), and a crashed holder's key lasts at most a second longer
//! than the TTL.
//!
//! **Unknown outcomes.** An `ms` whose reply was lost may or may not have stored the key. The
//! next `NS` then asks (`mg`) whether the key holds this attempt's owner value; if so the lock
//! is ours and is claimed with a CAS write that restarts its TTL. An acquisition that fails
//! after such an `ms` asks the same until the server answers, at most `resolve_timeout` past
//! its deadline: ours (granted after all), or not (nothing of this attempt is there:
//! [`LockError::Withdrawn`]); with no answer, the outcome stays unknown
//! ([`LockError::Connection`]). Only a request stranded on a broken connection and read by
//! the server later could still store the key afterwards, holding it until its TTL though
//! nobody holds the lock: a delay, not a second holder.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::AbortHandle;

use super::proto::{CallError, Conn, Reply, Request, check_key};
use super::ring::Ring;
use crate::recipe::drift;
use crate::recipe::retry::Backoff;
use crate::recipe::{
    Claim, Lease, LockError, LostSignal, LostTrigger, Recipe, RecipeConfig, Strategy, Tally,
    check_strategy, exclusive_only, own_handle,
};
use crate::sync::LockUnpoisoned;
use crate::system::System;

/// The server names of a ring of `n` servers: the cluster's node names, in node order.
pub(crate) fn node_names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("memcached{i}")).collect()
}

/// The `T<n>` a key is stored with for a lease TTL of `ttl`: whole seconds, rounded up, plus
/// the second the server's clock may already be into.
pub(crate) fn server_ttl(ttl: Duration) -> u64 {
    let whole = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    whole.max(1) + 1
}

/// The end of a key's validity when the request that stored it (with `T<server_ttl>`) was sent
/// at `sent`: it lives at least `server_ttl - 1` seconds from the server's reading of it, which
/// comes after the send; less the drift allowance.
pub(crate) fn valid_until(sent: Instant, server_ttl: u64, ttl: Duration) -> Instant {
    sent + Duration::from_secs(server_ttl.saturating_sub(1)).saturating_sub(drift(ttl))
}

/// The lock key and its fencing counter.
#[derive(Debug, Clone)]
struct Keys {
    lock: String,
    fence: String,
}

impl Keys {
    fn new(prefix: &str, key: &str) -> Result<Keys, LockError> {
        let lock = format!("{prefix}/{key}");
        let fence = format!("{lock}:fence");
        check_key(&fence).map_err(LockError::Server)?;
        Ok(Keys { lock, fence })
    }
}

/// Background tasks of one client (watchdogs, release retries), so `crash` stops them all.
#[derive(Default, Clone)]
struct Tasks(Arc<Mutex<HashMap<u64, AbortHandle>>>);

static NEXT_TASK: AtomicU64 = AtomicU64::new(1);

impl Tasks {
    fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) -> u64 {
        let id = NEXT_TASK.fetch_add(1, Ordering::Relaxed);
        let map = self.0.clone();
        let task = tokio::spawn(async move {
            fut.await;
            map.locked().remove(&id);
        });
        // A task that already ended removed nothing yet: insert, then drop it if finished.
        self.0.locked().insert(id, task.abort_handle());
        if task.is_finished() {
            self.0.locked().remove(&id);
        }
        id
    }

    fn stop(&self, id: u64) {
        if let Some(h) = self.0.locked().remove(&id) {
            h.abort();
        }
    }

    fn stop_all(&self) {
        for (_, h) in self.0.locked().drain() {
            h.abort();
        }
    }
}

/// What a Memcached lease keeps for its release.
struct Handle {
    node: usize,
    keys: Keys,
    owner: String,
    watchdog: u64,
    /// `unsafe-del`: release with a plain `md`.
    plain_del: bool,
}

/// The lock key's state as one owner sees it.
enum Owned {
    /// It holds this owner's value, at this CAS.
    Ours(u64),
    /// It is absent, or holds another value.
    NotOurs(&'static str),
}

/// One lock client: a connection per server (opened on first use), and the ring that places
/// keys on them.
pub(crate) struct MemcachedRecipe {
    cfg: RecipeConfig,
    nodes: Vec<Arc<Conn>>,
    ring: Ring,
    client_id: String,
    seq: AtomicU64,
    tasks: Tasks,
}

impl MemcachedRecipe {
    /// A client of the servers at `endpoints` (`127.0.0.1:port`, in node order); nothing is
    /// sent until the first lock request.
    pub(crate) fn new(endpoints: &[String], cfg: RecipeConfig) -> Result<Self, LockError> {
        if endpoints.is_empty() {
            return Err(LockError::Server(
                "no memcached server to connect to (the cluster lists no endpoints)".into(),
            ));
        }
        Ok(MemcachedRecipe {
            nodes: endpoints.iter().map(|e| Arc::new(Conn::new(e))).collect(),
            ring: Ring::new(&node_names(endpoints.len())),
            cfg,
            client_id: format!("{:016x}", rand::random::<u64>()),
            seq: AtomicU64::new(0),
            tasks: Tasks::default(),
        })
    }

    /// The server a lock key lives on (its fencing counter too).
    fn node_of(&self, keys: &Keys) -> usize {
        self.ring.node_for(&keys.lock).unwrap_or(0)
    }

    fn server_ttl(&self) -> u64 {
        server_ttl(self.cfg.ttl)
    }

    /// The time one request may take: a request timeout, no more than what is left before
    /// `until` (a try-lock's request still gets its request timeout).
    fn limit(&self, until: Instant, try_once: bool) -> Duration {
        if try_once {
            return self.cfg.request_timeout;
        }
        self.cfg
            .request_timeout
            .min(until.saturating_duration_since(Instant::now()))
    }

    /// Takes the lock on `node`: the send time of the request that stored (or claimed) it.
    async fn take(
        &self,
        node: &Conn,
        key: &str,
        keys: &Keys,
        owner: &str,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Instant, LockError> {
        let started = Instant::now();
        let try_once = deadline <= started;
        let add = Request::Set {
            key: &keys.lock,
            value: owner,
            ttl: self.server_ttl(),
            add: true,
            cas: None,
        };
        let mut backoff = Backoff::new(self.cfg.retry);
        let mut unanswered: Option<String> = None;
        // An unanswered add not yet looked for on the server (one `mg` after each).
        let mut unchecked = false;
        let poll = self.cfg.poll_interval.max(Duration::from_millis(1));
        let failure = loop {
            let sent = Instant::now();
            tally.requests(1);
            match node.call(&add, self.limit(deadline, try_once)).await {
                Ok(Reply::Stored(_)) => return Ok(sent),
                Ok(Reply::NotStored) => {
                    // A lost `ms` of this attempt may be what holds the key.
                    if unchecked {
                        let limit = self.limit(deadline, try_once);
                        match self.claim_if_ours(node, keys, owner, limit, tally).await {
                            Ok(Some(at)) => return Ok(at),
                            Ok(None) => unchecked = false,
                            Err(_) => {}
                        }
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if try_once || left.is_zero() {
                        break LockError::Timeout {
                            key: key.to_string(),
                            waited: started.elapsed(),
                        };
                    }
                    tokio::time::sleep(poll.min(left)).await;
                    if Instant::now() >= deadline {
                        break LockError::Timeout {
                            key: key.to_string(),
                            waited: started.elapsed(),
                        };
                    }
                    tally.wakeups(1);
                }
                Ok(Reply::Error(e)) => {
                    break LockError::Server(format!("{}: {e}", node.endpoint()));
                }
                Ok(other) => {
                    break LockError::Server(format!(
                        "{} answered an add with {other:?}",
                        node.endpoint()
                    ));
                }
                Err(e) => {
                    let err = match e {
                        CallError::NotSent(e) => LockError::Unavailable(e),
                        CallError::NoReply(e) => {
                            unanswered = Some(e.clone());
                            unchecked = true;
                            LockError::Connection(e)
                        }
                    };
                    if try_once || !backoff.wait(deadline).await {
                        break err;
                    }
                }
            }
        };
        match unanswered {
            None => Err(failure),
            Some(e) => {
                self.resolve(node, key, keys, owner, e, deadline, tally)
                    .await
            }
        }
    }

    /// After an acquisition whose `ms` went unanswered failed: asks the server, until it
    /// answers or `resolve_timeout` past `deadline`, whether the key is this attempt's. Ours:
    /// the send time of the CAS write that claimed it. Not ours: [`LockError::Withdrawn`].
    #[allow(clippy::too_many_arguments)]
    async fn resolve(
        &self,
        node: &Conn,
        key: &str,
        keys: &Keys,
        owner: &str,
        unanswered: String,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Instant, LockError> {
        let until = deadline.max(Instant::now()) + self.cfg.resolve_timeout;
        let mut backoff = Backoff::new(self.cfg.retry);
        loop {
            let limit = self.limit(until, false);
            if limit.is_zero() {
                break;
            }
            match self.claim_if_ours(node, keys, owner, limit, tally).await {
                Ok(Some(at)) => return Ok(at),
                Ok(None) => {
                    return Err(LockError::Withdrawn {
                        key: key.to_string(),
                        why: format!(
                            "an add got no reply ({unanswered}); the server then showed the lock \
                             key without this attempt's owner value"
                        ),
                    });
                }
                Err(_) if backoff.wait(until).await => {}
                Err(_) => break,
            }
        }
        Err(LockError::Connection(format!(
            "an add on '{key}' got no reply ({unanswered}) and the server did not say what became \
             of it within resolve_timeout ({:?})",
            self.cfg.resolve_timeout
        )))
    }

    /// Reads the lock key: this owner's (with its CAS) or not.
    async fn owned(
        &self,
        node: &Conn,
        keys: &Keys,
        owner: &str,
        limit: Duration,
        tally: &Tally,
    ) -> Result<Owned, CallError> {
        tally.requests(1);
        match node.call(&Request::Get { key: &keys.lock }, limit).await? {
            Reply::Value { data, flags } if data == owner.as_bytes() => match flags.cas {
                Some(cas) => Ok(Owned::Ours(cas)),
                None => Err(CallError::NoReply(format!(
                    "{} answered mg without the CAS asked for",
                    node.endpoint()
                ))),
            },
            Reply::Value { .. } => Ok(Owned::NotOurs("another client holds it")),
            Reply::Miss => Ok(Owned::NotOurs("the key is gone")),
            other => Err(CallError::NoReply(format!(
                "{} answered mg with {other:?}",
                node.endpoint()
            ))),
        }
    }

    /// If the lock key holds `owner`'s value, writes it again under its CAS with a fresh TTL
    /// (a renewal, or the claim of a lost grant): the send time of the read before that write,
    /// or `None` when the key is not ours.
    async fn claim_if_ours(
        &self,
        node: &Conn,
        keys: &Keys,
        owner: &str,
        limit: Duration,
        tally: &Tally,
    ) -> Result<Option<Instant>, CallError> {
        // A CAS mismatch means the item changed between the read and the write: read again.
        for _ in 0..3 {
            let sent = Instant::now();
            let cas = match self.owned(node, keys, owner, limit, tally).await? {
                Owned::Ours(cas) => cas,
                Owned::NotOurs(_) => return Ok(None),
            };
            let renew = Request::Set {
                key: &keys.lock,
                value: owner,
                ttl: self.server_ttl(),
                add: false,
                cas: Some(cas),
            };
            tally.requests(1);
            match node.call(&renew, limit).await? {
                Reply::Stored(_) => return Ok(Some(sent)),
                Reply::NotFound => return Ok(None),
                Reply::Exists => continue,
                other => {
                    return Err(CallError::NoReply(format!(
                        "{} answered a CAS write with {other:?}",
                        node.endpoint()
                    )));
                }
            }
        }
        Err(CallError::NoReply(format!(
            "the lock key on {} changed under every CAS write",
            node.endpoint()
        )))
    }

    /// The fencing token: the counter beside the lock key, incremented (created at 1). Tried
    /// until `deadline`, and for at least one request timeout: the lock is held meanwhile.
    async fn fence(
        &self,
        node: &Conn,
        keys: &Keys,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<u64, LockError> {
        let until = deadline.max(Instant::now() + self.cfg.request_timeout);
        let mut backoff = Backoff::new(self.cfg.retry);
        let incr = Request::Incr {
            key: &keys.fence,
            initial: 1,
        };
        loop {
            tally.requests(1);
            let err = match node.call(&incr, self.limit(until, false)).await {
                Ok(Reply::Value { data, .. }) => {
                    return std::str::from_utf8(&data)
                        .ok()
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .ok_or_else(|| {
                            LockError::Server(format!(
                                "the fencing counter {} holds {:?}, not a number",
                                keys.fence,
                                String::from_utf8_lossy(&data)
                            ))
                        });
                }
                Ok(other) => {
                    return Err(LockError::Server(format!(
                        "{} answered ma on {} with {other:?}",
                        node.endpoint(),
                        keys.fence
                    )));
                }
                Err(e) => e,
            };
            if !backoff.wait(until).await {
                return Err(LockError::Connection(format!(
                    "no fencing token for '{}': {err}",
                    keys.lock
                )));
            }
        }
    }

    /// The owner-checked release: `mg`, then `md C<cas>` if the value is ours. `Ok(true)`
    /// deleted, `Ok(false)` not ours (gone, or someone else's) with why.
    async fn release_checked(
        &self,
        node: &Conn,
        keys: &Keys,
        owner: &str,
        limit: Duration,
    ) -> Result<Result<(), &'static str>, CallError> {
        let tally = Tally::default();
        for _ in 0..3 {
            let cas = match self.owned(node, keys, owner, limit, &tally).await? {
                Owned::Ours(cas) => cas,
                Owned::NotOurs(why) => return Ok(Err(why)),
            };
            let del = Request::Delete {
                key: &keys.lock,
                cas: Some(cas),
            };
            match node.call(&del, limit).await? {
                Reply::Stored(_) => return Ok(Ok(())),
                Reply::NotFound => return Ok(Err("the key is gone")),
                Reply::Exists => continue,
                other => {
                    return Err(CallError::NoReply(format!(
                        "{} answered md with {other:?}",
                        node.endpoint()
                    )));
                }
            }
        }
        Err(CallError::NoReply(format!(
            "the lock key on {} changed under every compare-and-delete",
            node.endpoint()
        )))
    }

    /// Releases with retries for a few request timeouts: `Ok` as [`Self::release_checked`],
    /// `Err` when the server never answered.
    async fn release_retrying(
        &self,
        node: &Conn,
        keys: &Keys,
        owner: &str,
    ) -> Result<Result<(), &'static str>, String> {
        let until = Instant::now() + self.cfg.request_timeout * 3;
        let mut backoff = Backoff::new(self.cfg.retry);
        loop {
            match self
                .release_checked(node, keys, owner, self.limit(until, false))
                .await
            {
                Ok(r) => return Ok(r),
                Err(e) if !backoff.wait(until).await => return Err(e.to_string()),
                Err(_) => {}
            }
        }
    }

    /// Hands a release the server did not confirm to a background task that tries it again
    /// until the key's TTL is over (after that there is nothing left to delete).
    fn release_later(&self, node: usize, keys: Keys, owner: String) {
        let conn = self.nodes[node].clone();
        let cfg = self.cfg.clone();
        let until = Instant::now() + Duration::from_secs(self.server_ttl());
        let me = Releaser { conn, cfg };
        self.tasks.spawn(async move {
            let mut backoff = Backoff::new(me.cfg.retry);
            while backoff.wait(until).await {
                let limit = me.cfg.request_timeout;
                if release_on(&me.conn, &keys, &owner, limit).await.is_ok() {
                    return;
                }
            }
        });
    }
}

/// What a background release needs.
struct Releaser {
    conn: Arc<Conn>,
    cfg: RecipeConfig,
}

/// One owner-checked release on `conn`, outside a recipe (the background retry): `Ok` once
/// the server answered (deleted, or not ours).
async fn release_on(
    conn: &Conn,
    keys: &Keys,
    owner: &str,
    limit: Duration,
) -> Result<(), CallError> {
    match conn.call(&Request::Get { key: &keys.lock }, limit).await? {
        Reply::Value { data, flags } if data == owner.as_bytes() => {
            let del = Request::Delete {
                key: &keys.lock,
                cas: flags.cas,
            };
            conn.call(&del, limit).await.map(|_| ())
        }
        _ => Ok(()),
    }
}

/// One watchdog renewal: `Ok(true)` renewed, `Ok(false)` the key is gone or not ours.
async fn renew_once(
    conn: &Conn,
    keys: &Keys,
    owner: &str,
    server_ttl: u64,
    limit: Duration,
) -> Result<bool, CallError> {
    for _ in 0..3 {
        let cas = match conn.call(&Request::Get { key: &keys.lock }, limit).await? {
            Reply::Value { data, flags } if data == owner.as_bytes() => flags.cas,
            Reply::Value { .. } | Reply::Miss => return Ok(false),
            other => {
                return Err(CallError::NoReply(format!("mg answered {other:?}")));
            }
        };
        let Some(cas) = cas else {
            return Err(CallError::NoReply("mg gave no CAS".into()));
        };
        let renew = Request::Set {
            key: &keys.lock,
            value: owner,
            ttl: server_ttl,
            add: false,
            cas: Some(cas),
        };
        match conn.call(&renew, limit).await? {
            Reply::Stored(_) => return Ok(true),
            Reply::NotFound => return Ok(false),
            Reply::Exists => continue,
            other => return Err(CallError::NoReply(format!("ms answered {other:?}"))),
        }
    }
    Err(CallError::NoReply(
        "the key changed under every renewal".into(),
    ))
}

/// What a watchdog keeps.
struct Held {
    conn: Arc<Conn>,
    keys: Keys,
    owner: String,
    ttl: Duration,
    server_ttl: u64,
    granted_at: Instant,
    /// The limit of one request.
    request_timeout: Duration,
}

/// Renews `held` every ttl/3 until it is lost; returns when the holder must stop counting on
/// it: a renewal found the key gone or someone else's, or the validity ended unrenewed.
async fn keep(held: Held) {
    let period = held.ttl / 3;
    let retry = (held.ttl / 20).max(Duration::from_millis(10));
    let mut valid = valid_until(held.granted_at, held.server_ttl, held.ttl);
    let mut next = held.granted_at + period;
    loop {
        let round = async {
            tokio::time::sleep_until(next.into()).await;
            let sent = Instant::now();
            let r = renew_once(
                &held.conn,
                &held.keys,
                &held.owner,
                held.server_ttl,
                held.request_timeout
                    .min(period)
                    .max(Duration::from_millis(50)),
            )
            .await;
            (sent, r)
        };
        // Whatever the server does (answer late, never), the lease ends at `valid`.
        let Ok((sent, r)) = tokio::time::timeout_at(valid.into(), round).await else {
            return;
        };
        match r {
            Ok(true) => {
                valid = valid_until(sent, held.server_ttl, held.ttl);
                next = sent + period;
            }
            Ok(false) => return,
            Err(_) => next = Instant::now() + retry,
        }
    }
}

impl Recipe for MemcachedRecipe {
    fn system(&self) -> System {
        System::Memcached
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        check_strategy(System::Memcached, strategy)?;
        exclusive_only(System::Memcached, claim)?;
        let keys = Keys::new(&self.cfg.prefix, key)?;
        let n = self.node_of(&keys);
        let node = &self.nodes[n];
        let owner = format!(
            "{}:{}",
            self.client_id,
            self.seq.fetch_add(1, Ordering::Relaxed)
        );
        let granted_at = self.take(node, key, &keys, &owner, deadline, tally).await?;
        let token = match self.fence(node, &keys, deadline, tally).await {
            Ok(t) => t,
            Err(e) => {
                // Held without a token: give it back before saying so.
                return Err(match self.release_retrying(node, &keys, &owner).await {
                    Ok(_) => LockError::Withdrawn {
                        key: key.to_string(),
                        why: format!("{e}; the lock was given back"),
                    },
                    Err(_) => e,
                });
            }
        };
        let server_ttl = self.server_ttl();
        let valid = valid_until(granted_at, server_ttl, self.cfg.ttl);
        let (trigger, lost) = LostSignal::new();
        let held = Held {
            conn: node.clone(),
            keys: keys.clone(),
            owner: owner.clone(),
            ttl: self.cfg.ttl,
            server_ttl,
            granted_at,
            request_timeout: self.cfg.request_timeout,
        };
        let watchdog = self.tasks.spawn(watch(held, self.cfg.renew, trigger));
        let acquired_at = Instant::now();
        Ok(Lease {
            key: key.to_string(),
            token,
            acquired_at,
            ttl: valid.saturating_duration_since(acquired_at),
            ttl_spent: Duration::ZERO,
            wakeups: tally.wakeup_count(),
            requests: tally.request_count(),
            fallback_polls: 0,
            queue_position: None,
            lost,
            handle: Box::new(Handle {
                node: n,
                keys,
                owner,
                watchdog,
                plain_del: strategy == Strategy::UnsafeDel,
            }),
        })
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let h = own_handle::<Handle>(lease.handle, &lease.key, System::Memcached)?;
        self.tasks.stop(h.watchdog);
        let node = &self.nodes[h.node];
        if h.plain_del {
            // The `unsafe-del` mistake: whoever holds the key now loses it.
            let del = Request::Delete {
                key: &h.keys.lock,
                cas: None,
            };
            return match node.call(&del, self.cfg.request_timeout).await {
                Ok(Reply::Stored(_) | Reply::NotFound) => Ok(()),
                Ok(other) => Err(LockError::Server(format!(
                    "{} answered md with {other:?}",
                    node.endpoint()
                ))),
                Err(CallError::NotSent(e)) => Err(LockError::Unavailable(e)),
                Err(CallError::NoReply(e)) => Err(LockError::Connection(e)),
            };
        }
        match self.release_retrying(node, &h.keys, &h.owner).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(LockError::Lost {
                key: lease.key,
                why: format!("the lock had expired before the release ({why})"),
            }),
            Err(e) => {
                self.release_later(h.node, h.keys, h.owner);
                Err(LockError::Connection(format!(
                    "release of '{}' got no answer: {e}",
                    lease.key
                )))
            }
        }
    }

    async fn crash(self) {
        self.tasks.stop_all();
        for n in &self.nodes {
            n.close().await;
        }
    }
}

/// The watchdog: renews (with `renew`) or waits out the validity, then fires `lost`.
async fn watch(held: Held, renew: bool, lost: LostTrigger) {
    if renew {
        keep(held).await;
    } else {
        let valid = valid_until(held.granted_at, held.server_ttl, held.ttl);
        tokio::time::sleep_until(valid.into()).await;
    }
    lost.fire();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_ttl_covers_the_lease_ttl_despite_the_one_second_tick() {
        assert_eq!(server_ttl(Duration::from_secs(10)), 11);
        assert_eq!(server_ttl(Duration::from_millis(1500)), 3);
        assert_eq!(server_ttl(Duration::from_secs(1)), 2);
        assert_eq!(server_ttl(Duration::from_millis(1)), 2);
        // T0 would mean "never expires": never sent.
        assert_eq!(server_ttl(Duration::ZERO), 2);
        let t = Instant::now();
        let ttl = Duration::from_secs(10);
        // T11 lives more than 10 s: the validity is 10 s less the 102 ms drift allowance.
        assert_eq!(
            valid_until(t, server_ttl(ttl), ttl),
            t + Duration::from_millis(9898)
        );
    }

    #[test]
    fn keys_carry_the_prefix_and_bad_keys_are_refused_before_any_request() {
        let k = Keys::new("/lockbench/r/c", "k0").unwrap();
        assert_eq!(k.lock, "/lockbench/r/c/k0");
        assert_eq!(k.fence, "/lockbench/r/c/k0:fence");
        let e = Keys::new("/p", "a key").unwrap_err();
        assert!(matches!(e, LockError::Server(_)), "{e:?}");
        assert_eq!(node_names(3), ["memcached1", "memcached2", "memcached3"]);
    }

    #[tokio::test]
    async fn other_kinds_and_strategies_are_refused_without_a_request() {
        // A port nobody listens on: a request would fail differently.
        let r = MemcachedRecipe::new(&["127.0.0.1:9".into()], RecipeConfig::default()).unwrap();
        let soon = Instant::now() + Duration::from_secs(1);
        let t = Tally::default();
        let e = r
            .acquire_claim("k", Strategy::Herd, Claim::Read, soon, &t)
            .await
            .unwrap_err();
        assert!(matches!(e, LockError::KindUnsupported { .. }), "{e:?}");
        let e = r
            .acquire_claim("k", Strategy::Predecessor, Claim::Exclusive, soon, &t)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("herd, unsafe-del"), "{e}");
        assert_eq!(t.request_count(), 0);
        assert!(MemcachedRecipe::new(&[], RecipeConfig::default()).is_err());
    }

    #[tokio::test]
    async fn an_unreachable_server_is_unavailable_at_the_deadline() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let gone = free.local_addr().unwrap().to_string();
        drop(free);
        let r = MemcachedRecipe::new(&[gone], RecipeConfig::default()).unwrap();
        let started = Instant::now();
        let e = r
            .acquire("k", Strategy::Herd, started + Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(matches!(e, LockError::Unavailable(_)), "{e:?}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }
}
