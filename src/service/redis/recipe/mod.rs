//! The Redis lock on one master (found through Sentinel), after Redisson's `RedissonLock` and
//! `RedissonFairLock`.
//!
//! - **herd**: `SET key owner NX PX ttl` plus `INCR key:fence` in one script. A waiter that finds
//!   the lock busy subscribes to `key:released`; every release publishes there, and every
//!   subscriber tries again on every message (the herd). It also retries when the holder's TTL
//!   runs out (no message comes when a holder dies) and at least every `fallback_poll`.
//! - **predecessor**: a FIFO queue per key kept by the scripts; a release publishes only to the
//!   queue head's own channel, so one release wakes one waiter, which then takes the lock.
//!   Entries expire unless their waiter refreshes them (on every take attempt; a waiter with
//!   others ahead of it, which has nothing to hear until it is first, makes one only every third
//!   of the entry TTL rather than every fallback poll), so a dead waiter blocks the queue for at
//!   most the entry TTL; the refresh that drops a dead head wakes the next one. The wake-up is a
//!   message on a per-waiter channel (as `RedissonFairLock` does) rather than a `BLPOP` on a
//!   per-waiter list: the same targeted wake-up, but over the client's one pub/sub connection
//!   instead of one blocking connection per waiting acquisition. A pub/sub connection that dies
//!   is reopened at once and its waiters look again (`redis_pubsub`); a message lost otherwise
//!   is covered by the fallback poll (the head) or the next refresh.
//!
//! The read-write lock and the semaphore (`shared.rs`) queue under both strategies, as on
//! ZooKeeper and etcd: one FIFO queue granted by [`crate::recipe::claim::turn`], evaluated by
//! the scripts on the server; a removal wakes every waiter (herd) or only the waiters it lets
//! in, each on its own channel (predecessor).
//!
//! Three more strategies are known-broken designs, unsafe, for calibration (`broken.rs`):
//! `unsafe-del` (the herd with a release that does not check the owner),
//! `unsafe-setnx-expire` (`SETNX` and `PEXPIRE` as two commands, herd waiting otherwise) and,
//! for semaphores, `unsafe-get-set` (the holder count read with `GET` and written back plus
//! one with `SET`).
//!
//! **Unknown outcomes and clean-up.** A take whose answer was lost (a timeout, a dropped
//! connection) is tried again with the same owner value, and the take scripts grant again to
//! the owner that already holds the lock, so a lost grant is found within the deadline. If the
//! acquisition fails in the end after such a take, it asks the master (the current one, through
//! Sentinel, after a failover) until it answers, at most `resolve_timeout` past the deadline:
//! is the lock key's value this attempt's owner value? Then a lost take granted it: the lock is
//! renewed and the acquisition succeeds after all, with the fencing counter as its token (only
//! grants raise it on a master, so it is still the one that grant drew). Otherwise its queue
//! entry is removed in the same script, and the acquisition fails as
//! [`LockError::Withdrawn`]. Without an answer by then, the outcome stays unknown
//! ([`LockError::Connection`]) and the janitor goes on giving it back. The question travels on
//! the connection the takes used, so the master answers it after any take it had still to read;
//! only a take stranded elsewhere (on a connection that broke, or on a master a failover
//! demoted) could land later, holding the key there until its TTL or the demotion though
//! nobody holds the lock (no second holder from it: a delay, not a safety risk). A release that
//! got no answer is retried by the janitor until the master confirms it, so the key goes as
//! soon as the master answers, not at the end of its TTL. (`unsafe-del`'s plain `DEL` is not
//! retried: its mistake stays as it is; `unsafe-setnx-expire` never claims a lost take, whose
//! `SETNX` drew no token: it is given back.)
//!
//! Fencing tokens come from `INCR` on the master. After a Sentinel failover, writes that had not
//! reached the promoted replica are lost, the lock key included: two clients may then hold the
//! lock and tokens may repeat. That is Redis replication, measured by the chaos runs, not hidden.

mod broken;
pub(crate) mod cleanup;
pub(crate) mod common;
pub mod keyspace;
mod pubsub;
pub(crate) mod scripts;
pub use scripts::{DEADLINES_SUFFIX, herd_cycle_sources};
pub(crate) mod server;
pub(crate) mod shared;
pub(crate) mod wait;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::recipe::deadline::Budget;
use crate::recipe::janitor::Janitor;
use crate::recipe::{
    Claim, Lease, LockError, Recipe, RecipeConfig, Strategy, Tally, check_strategy,
};
use crate::service::redis::recipe::broken::{crashes_between_steps, simulated_crash};
use crate::service::redis::recipe::cleanup::{
    Claim as LostGrant, GiveBack, RedisJanitorCtx, Target,
};
use crate::service::redis::recipe::common::{
    Held, NodeSource, Poll, RedisHandle, ReleaseKind, Waiter, Watchdogs, entry_ttl, new_client_id,
    owner_value, queue_prompt, wake_message,
};
use crate::service::redis::recipe::scripts::{Keys, QueueEntry, TicketMode};
use crate::service::redis::recipe::server::{Attempt, FairTake, Server};
use crate::service::redis::recipe::shared::SharedTake;
use crate::service::redis::recipe::wait::{Grant, Hearing, Progress, Take, Taker, acquire_loop};
use crate::system::System;

/// What one take attempt came to.
enum Step {
    /// The server's answer: granted (token > 0) or how long to wait.
    Answer(Attempt),
    /// `unsafe-setnx-expire` only: the `SETNX` won and the client "died" before its `PEXPIRE`.
    Crashed,
}

/// Where the master is.
#[derive(Debug, Clone)]
pub enum RedisTarget {
    /// A fixed server (no failover).
    Single {
        /// `host:port` reachable from this process.
        endpoint: String,
    },
    /// Ask Sentinel which server is the master, and ask again after connection errors.
    Sentinel {
        /// Sentinel `host:port`s reachable from this process.
        sentinels: Vec<String>,
        /// The name Sentinel monitors the master under (`mymaster`).
        master_name: String,
        /// Sentinel reports the master's host name as the servers know it (a container name);
        /// this maps it (or `host:port`) to an address this process can reach.
        address_map: HashMap<String, String>,
    },
}

/// The current master, shared with the watchdogs so renewals follow a failover too.
pub(crate) struct Master {
    target: RedisTarget,
    cfg: RecipeConfig,
    node: tokio::sync::RwLock<Arc<Server>>,
}

impl Master {
    /// The server commands go to now.
    pub async fn current(&self) -> Arc<Server> {
        self.node.read().await.clone()
    }

    /// After a connection error on `failed`: ask Sentinel again and switch if the master moved.
    pub async fn reresolve(&self, failed: &Arc<Server>, deadline: Instant) -> Arc<Server> {
        if matches!(self.target, RedisTarget::Single { .. }) {
            return failed.clone();
        }
        let mut cur = self.node.write().await;
        if !Arc::ptr_eq(&cur, failed) {
            return cur.clone(); // another task already moved on
        }
        let deadline = deadline.min(Instant::now() + self.cfg.request_timeout);
        if let Ok(endpoint) = resolve(&self.target, &self.cfg, deadline).await
            && endpoint != cur.endpoint()
            && let Ok(node) = Server::new(
                &endpoint,
                self.cfg.request_timeout,
                self.cfg.credentials.as_ref(),
            )
        {
            cur.shutdown().await;
            *cur = Arc::new(node);
        }
        cur.clone()
    }
}

/// A Redis lock client (one recipe value = one client identity and connection set).
pub struct RedisRecipe {
    cfg: RecipeConfig,
    master: Arc<Master>,
    client_id: String,
    seq: AtomicU64,
    watchdogs: Watchdogs,
    /// Gives back, until the master confirms it, what a release or a failed acquisition could
    /// not: a key would hold the lock until its TTL, a queue entry block the queue for the
    /// entry TTL.
    janitor: Janitor<GiveBack>,
}

impl RedisRecipe {
    /// Finds the master (through Sentinel if asked) and checks it answers, all before `deadline`.
    pub async fn connect(
        target: RedisTarget,
        cfg: RecipeConfig,
        deadline: Instant,
    ) -> Result<RedisRecipe, LockError> {
        let node = loop {
            let r = match resolve(&target, &cfg, deadline).await {
                Ok(endpoint) => {
                    match Server::new(&endpoint, cfg.request_timeout, cfg.credentials.as_ref()) {
                        Ok(node) => {
                            let left = deadline.saturating_duration_since(Instant::now());
                            node.query::<String>(&::redis::cmd("PING"), left)
                                .await
                                .map(|_| node)
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(node) => break node,
                Err(e) if Instant::now() + Duration::from_millis(100) >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        let master = Arc::new(Master {
            target,
            cfg: cfg.clone(),
            node: tokio::sync::RwLock::new(Arc::new(node)),
        });
        let ctx = RedisJanitorCtx::new(Target::Master(master.clone()), &cfg);
        Ok(RedisRecipe {
            janitor: Janitor::new(ctx, cfg.retry),
            master,
            cfg,
            client_id: new_client_id(),
            seq: AtomicU64::new(0),
            watchdogs: Watchdogs::default(),
        })
    }

    /// The endpoint this client currently sends its commands to.
    pub async fn master_endpoint(&self) -> String {
        self.master.current().await.endpoint().to_string()
    }

    async fn master(&self) -> Arc<Server> {
        self.master.current().await
    }

    async fn reresolve(&self, failed: &Arc<Server>, deadline: Instant) -> Arc<Server> {
        self.master.reresolve(failed, deadline).await
    }

    /// One take attempt on `node`. An `unsafe-setnx-expire` take that wins its `SETNX` dies
    /// before its `PEXPIRE` when `who.crash` says so ([`Step::Crashed`]); `requests` counts the
    /// round trips sent.
    async fn try_once(
        &self,
        node: &Server,
        who: &Contender<'_>,
        ticket: Option<u64>,
        limit: Duration,
        requests: &mut u64,
    ) -> Result<Step, LockError> {
        let (keys, owner) = (&who.keys, who.owner.as_str());
        *requests += 1;
        if let Claim::Permit { permits } = who.claim
            && who.strategy == Strategy::UnsafeGetSet
        {
            // The calibration's flaw: the count read and written back by two commands.
            let count = node.count_get(keys, limit).await?;
            if count >= i64::from(permits) {
                return Ok(Step::Answer(Attempt {
                    token: 0,
                    ticket: None,
                    retry_within: None,
                    holder: None,
                }));
            }
            *requests += 1;
            let token = node.count_set_and_fence(keys, count + 1, limit).await?;
            return Ok(Step::Answer(Attempt {
                token,
                ticket: None,
                retry_within: None,
                holder: None,
            }));
        }
        if who.claim.is_shared_kind() {
            let wake = wake_message(owner);
            let take = SharedTake {
                entry_ttl: entry_ttl(&self.cfg),
                permits: match who.claim {
                    Claim::Permit { permits } => permits,
                    _ => 1,
                },
                wake: &wake,
                mode: TicketMode::Propose,
            };
            return node
                .shared_acquire(keys, owner, self.cfg.ttl, &take, limit)
                .await
                .map(Step::Answer);
        }
        match who.strategy {
            Strategy::Herd | Strategy::UnsafeDel => node
                .herd_acquire(keys, owner, self.cfg.ttl, limit)
                .await
                .map(Step::Answer),
            Strategy::UnsafeSetnxExpire => {
                let (set, busy) = node.setnx(keys, owner, limit).await?;
                if !set {
                    return Ok(Step::Answer(busy));
                }
                if who.crash {
                    return Ok(Step::Crashed);
                }
                *requests += 1;
                let token = node.expire_and_fence(keys, self.cfg.ttl, limit).await?;
                Ok(Step::Answer(Attempt {
                    token,
                    ticket: None,
                    retry_within: None,
                    holder: None,
                }))
            }
            _ => {
                // The take wakes a waiter only as the queue's correction (see `FAIR_ACQUIRE`).
                let wake = queue_prompt(owner);
                let take = FairTake {
                    entry_ttl: entry_ttl(&self.cfg),
                    mode: ticket.map_or(TicketMode::Propose, TicketMode::Final),
                    wake: &wake,
                };
                node.fair_acquire(keys, owner, self.cfg.ttl, &take, limit)
                    .await
                    .map(Step::Answer)
            }
        }
    }

    /// After an acquisition failed with `err`: leaves nothing behind (its queue entry, a lock a
    /// lost answer granted it). With no take unanswered, the give-back is confirmed before
    /// `err` is reported, unless the master does not answer in a request timeout; then the
    /// janitor goes on. After a take whose answer was lost (`unanswered`), the outcome waits
    /// for the master, at most `resolve_timeout` past `deadline`: a grant the lost take made
    /// (token and the send time of the request that renewed it), [`LockError::Withdrawn`], or
    /// the unanswered error when the master never answered.
    async fn resolve(
        &self,
        who: &Contender<'_>,
        err: LockError,
        unanswered: Option<LockError>,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<(u64, Instant), LockError> {
        if who.strategy == Strategy::UnsafeGetSet {
            // The count cannot tell whose increment it holds: nothing to give back or claim.
            return Err(unanswered.unwrap_or(err));
        }
        let shared = who.claim.is_shared_kind();
        let give_back = GiveBack::new(&who.keys, &who.owner, 0).shared(shared);
        let Some(unknown) = unanswered else {
            let limit = Instant::now() + self.cfg.request_timeout;
            self.janitor.confirm(give_back, limit, tally).await;
            return Err(err);
        };
        // `SETNX` draws no token: a lost one is given back, never claimed.
        let claim = (who.strategy != Strategy::UnsafeSetnxExpire).then(LostGrant::new);
        let chore = match &claim {
            Some(c) => give_back.claiming(c),
            None => give_back,
        };
        let until = deadline + self.cfg.resolve_timeout;
        let confirmed = self.janitor.confirm(chore, until, tally).await;
        if let Some(grant) = claim.and_then(|c| c.settle()) {
            return Ok(grant);
        }
        if confirmed {
            Err(LockError::Withdrawn {
                key: who.key.to_string(),
                why: format!(
                    "{unknown}; the master confirmed the lock is not this attempt's and its \
                     queue entry is gone"
                ),
            })
        } else {
            Err(unknown)
        }
    }
}

/// Who one acquisition is: the lock, the owner value its takes carry, and how it takes.
struct Contender<'a> {
    key: &'a str,
    keys: Keys,
    owner: String,
    strategy: Strategy,
    /// What the acquisition claims (exclusive, read, write, a permit).
    claim: Claim,
    /// The owner's sequence number (`unsafe-setnx-expire` crashes count by it).
    seq: u64,
    /// This attempt's `unsafe-setnx-expire` take dies between its two steps if it wins.
    crash: bool,
}

/// The single-master steps of the shared acquire loop: takes go to the current master, and a
/// connection error asks Sentinel again.
struct MasterTaker<'a> {
    recipe: &'a RedisRecipe,
    who: Contender<'a>,
    deadline: Instant,
    /// Where this attempt's wake-ups come (all releases for the herd, its own for a queue).
    channel: String,
    node: Arc<Server>,
    /// The master the waiter is subscribed on, if any.
    subscribed: Option<Arc<Server>>,
    /// The queue ticket the master handed out (predecessor).
    ticket: Option<u64>,
}

impl Taker for MasterTaker<'_> {
    async fn take(&mut self, left: Duration, progress: &mut Progress) -> Result<Take, LockError> {
        let sent = Instant::now();
        let (r, who) = (self.recipe, &self.who);
        let attempt = r
            .try_once(&self.node, who, self.ticket, left, &mut progress.requests)
            .await;
        match &attempt {
            Ok(_) => r.janitor.cluster_answered(),
            Err(e) if e.is_indeterminate() => progress.unanswered = Some(e.clone()),
            Err(_) => {}
        }
        Ok(match attempt? {
            Step::Crashed => Take::Abandon(simulated_crash(
                who.key,
                who.seq + 1,
                r.cfg.crash_between_steps_every,
            )),
            Step::Answer(a) if a.token > 0 => Take::Granted(Grant {
                token: a.token,
                ticket: a.ticket.or(self.ticket),
                granted_at: sent,
            }),
            Step::Answer(a) => {
                self.ticket = a.ticket.or(self.ticket);
                Take::Wait {
                    poll: Poll::after(who.strategy, a.retry_within.is_none(), &r.cfg),
                    ttl_left: a.retry_within,
                }
            }
        })
    }

    async fn subscribe(
        &mut self,
        waiter: &Waiter,
        left: Duration,
        progress: &mut Progress,
    ) -> Hearing {
        let node = &self.node;
        if self
            .subscribed
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, node))
        {
            return Hearing::Already;
        }
        if let Some(old) = self.subscribed.take() {
            old.unsubscribe(&self.channel, waiter.id).await;
        }
        progress.requests += 1;
        let subscribed = node
            .subscribe(&self.channel, waiter.id, waiter.tx.clone(), left)
            .await
            .is_ok();
        if subscribed {
            self.subscribed = Some(node.clone());
            Hearing::Subscribed
        } else {
            Hearing::Deaf
        }
    }

    async fn reconnect(&mut self, deadline: Instant) {
        self.node = self.recipe.reresolve(&self.node, deadline).await;
    }

    fn unsubscribe(&mut self, waiter: &Waiter, progress: &mut Progress) {
        if let Some(n) = self.subscribed.take() {
            let (channel, id) = (self.channel.clone(), waiter.id);
            tokio::spawn(async move { n.unsubscribe(&channel, id).await });
            progress.requests += 1;
        }
    }

    async fn resolve(
        &mut self,
        err: LockError,
        unanswered: Option<LockError>,
        tally: &Tally,
    ) -> Result<Grant, LockError> {
        let (token, granted_at) = self
            .recipe
            .resolve(&self.who, err, unanswered, self.deadline, tally)
            .await?;
        Ok(Grant {
            token,
            ticket: self.ticket,
            granted_at,
        })
    }
}

impl Recipe for RedisRecipe {
    fn system(&self) -> System {
        System::Redis
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        check_strategy(System::Redis, strategy)?;
        let fits = match strategy {
            Strategy::UnsafeGetSet => matches!(claim, Claim::Permit { .. }),
            Strategy::UnsafeDel | Strategy::UnsafeSetnxExpire => claim == Claim::Exclusive,
            _ => true,
        };
        if !fits {
            // A calibration breaks one kind: the plan never asks it for another.
            return Err(LockError::KindUnsupported {
                system: System::Redis,
                claim: claim.word(),
            });
        }
        let budget =
            Budget::acquire(key, deadline, self.cfg.request_timeout).retrying(self.cfg.retry);
        let keys = Keys::new(&self.cfg.prefix, key);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        // A queued claim's word ends its owner value, so the scripts read every entry's claim
        // from the queue itself (see `shared.rs`).
        let shared = claim.is_shared_kind() && strategy != Strategy::UnsafeGetSet;
        let owner = owner_value(&self.client_id, seq, shared.then_some(claim));
        // Only `unsafe-setnx-expire` has two steps to die between (see `RecipeConfig`).
        let every = self.cfg.crash_between_steps_every;
        let crash =
            strategy == Strategy::UnsafeSetnxExpire && crashes_between_steps(seq + 1, every);
        let channel = match strategy {
            Strategy::Predecessor => keys.wake_channel(&owner),
            _ => keys.released_channel(),
        };
        let mut taker = MasterTaker {
            recipe: self,
            who: Contender {
                key,
                keys,
                owner,
                strategy,
                claim,
                seq,
                crash,
            },
            deadline,
            channel,
            node: self.master().await,
            subscribed: None,
            ticket: None,
        };
        let grant = acquire_loop(&mut taker, &budget, tally).await?;
        let who = taker.who;
        let held = Held {
            source: NodeSource::Master(self.master.clone()),
            quorum: 1,
            keys: who.keys,
            owner: who.owner,
            ttl: self.cfg.ttl,
            granted_at: grant.granted_at,
            release: match strategy {
                Strategy::UnsafeDel => ReleaseKind::PlainDel,
                Strategy::UnsafeGetSet => ReleaseKind::CountDecr,
                _ if shared => ReleaseKind::Shared,
                Strategy::Herd => ReleaseKind::Unqueued,
                _ => ReleaseKind::OwnerChecked,
            },
        };
        // The kinds that share the lock queue under either strategy.
        let queue_position = (strategy == Strategy::Predecessor || shared)
            .then_some(grant.ticket)
            .flatten();
        Ok(self.watchdogs.grant(
            held,
            self.cfg.renew,
            key,
            grant.token,
            queue_position,
            tally,
        ))
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let h = crate::recipe::own_handle::<RedisHandle>(lease.handle, &lease.key, System::Redis)?;
        self.watchdogs.stop(h.watchdog);
        // The master may have moved since the grant; the current one is where the key lives now.
        let node = self.master().await;
        let wake = wake_message(&h.owner);
        if h.release == ReleaseKind::CountDecr {
            // `unsafe-get-set`: a count, not an owner, so nothing to check and nothing the
            // janitor could retry safely (a second `DECR` would free a permit twice).
            return node
                .count_release(&h.keys, &wake, self.cfg.request_timeout)
                .await;
        }
        if h.release == ReleaseKind::PlainDel {
            // The `unsafe-del` mistake: whoever holds the key now loses it, and this client
            // cannot tell whether that was itself.
            return match node
                .del_unchecked(&h.keys, &wake, self.cfg.request_timeout)
                .await
            {
                Ok(_) => Ok(()),
                Err(e) => {
                    if e.is_retryable() {
                        self.reresolve(&node, Instant::now() + self.cfg.request_timeout)
                            .await;
                    }
                    Err(e)
                }
            };
        }
        let shared = h.release == ReleaseKind::Shared;
        let released = match shared {
            true => {
                let leave = (QueueEntry::Leave, Duration::ZERO);
                node.shared_release(&h.keys, &h.owner, 0, leave, &wake, self.cfg.request_timeout)
                    .await
            }
            false => {
                node.release(
                    &h.keys,
                    &h.owner,
                    0,
                    Some(&wake),
                    h.release.queue_entry(),
                    self.cfg.request_timeout,
                )
                .await
            }
        };
        match released {
            Ok(true) => Ok(()),
            Ok(false) => Err(LockError::Lost {
                key: lease.key,
                why: "the lock had expired (or was taken over) before the release".into(),
            }),
            Err(e) => {
                if e.is_retryable() {
                    self.reresolve(&node, Instant::now() + self.cfg.request_timeout)
                        .await;
                    // Redisson retries an unlock: until the master confirms it, the key would
                    // hold the lock until its TTL.
                    let give_back = GiveBack::new(&h.keys, &h.owner, 0).waking(&wake);
                    self.janitor.hand(give_back.shared(shared));
                }
                Err(e)
            }
        }
    }

    async fn crash(self) {
        self.watchdogs.stop_all();
        self.master.current().await.shutdown().await;
    }
}

/// The master's reachable endpoint: fixed, or the first Sentinel answer whose host name maps to
/// a server that says it is a master.
async fn resolve(
    target: &RedisTarget,
    cfg: &RecipeConfig,
    deadline: Instant,
) -> Result<String, LockError> {
    let (sentinels, master_name, map) = match target {
        RedisTarget::Single { endpoint } => return Ok(endpoint.clone()),
        RedisTarget::Sentinel {
            sentinels,
            master_name,
            address_map,
        } => (sentinels, master_name, address_map),
    };
    let mut problems = Vec::new();
    for s in sentinels {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        // Sentinels are asked without the servers' login (Sentinel's own `requirepass` is
        // not supported yet).
        let sentinel = Server::new(s, cfg.request_timeout, None)?;
        let mut cmd = ::redis::cmd("SENTINEL");
        cmd.arg("get-master-addr-by-name").arg(master_name);
        let addr = match sentinel.query::<Option<(String, String)>>(&cmd, left).await {
            Ok(Some(a)) => a,
            Ok(None) => {
                problems.push(format!("{s} does not know master '{master_name}'"));
                continue;
            }
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        // With no map, the address Sentinel reports is one this process reaches (a user's
        // cluster that announces routable addresses).
        let reported = format!("{}:{}", addr.0, addr.1);
        let Some(endpoint) = map
            .get(&addr.0)
            .or_else(|| map.get(&reported))
            .cloned()
            .or_else(|| map.is_empty().then_some(reported))
        else {
            problems.push(format!(
                "{s} names master {}:{}, which address_map does not map to a reachable address",
                addr.0, addr.1
            ));
            continue;
        };
        // Sentinel may still name a master that was just demoted or is being promoted.
        let node = Server::new(&endpoint, cfg.request_timeout, cfg.credentials.as_ref())?;
        let left = deadline.saturating_duration_since(Instant::now());
        match node
            .query::<::redis::Value>(&::redis::cmd("ROLE"), left)
            .await
        {
            Ok(::redis::Value::Array(v))
                if v.first()
                    .and_then(|r| ::redis::from_redis_value_ref::<String>(r).ok())
                    .as_deref()
                    == Some("master") =>
            {
                return Ok(endpoint.clone());
            }
            Ok(other) => problems.push(format!("{endpoint} is not a master: {other:?}")),
            Err(e) => problems.push(e.to_string()),
        }
    }
    Err(LockError::Connection(format!(
        "no Sentinel named a reachable master '{master_name}' (check the Sentinels are up, the \
         master name, and that address_map covers the host names they report): {}",
        problems.join("; ")
    )))
}
