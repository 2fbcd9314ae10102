//! Redlock: one lock over N independent Redis masters (default 5), after the Redis docs' spec.
//!
//! A round runs the take script on every master at once, each with a short per-node timeout.
//! It succeeds with a majority (N/2+1) of grants and a positive validity = TTL − round time −
//! drift (drift = 1% of TTL + 2 ms); the lease's `ttl` is that validity. Release runs on every
//! master and succeeds only if a majority still held the lock (else the lease was lost, or,
//! when too few masters answered to tell, the connection error).
//!
//! - **herd**: a failed round that won some masters gives them back at once (without notifying:
//!   the lock was never free) and retries after a random delay (0 to `retry_delay_max`), so
//!   split votes untangle; except when one other owner holds a quorum of the masters that
//!   answered (the take script names each refusing master's owner value) and the round before
//!   found the same owner holding one: it holds the lock, and the round waits as one that won
//!   nothing does, so a holder on a bare quorum (3 of 5, the other 2 free) does not make its
//!   waiters win and give back the free masters in a loop. A round that won nothing waits for
//!   a release notification from any master (subscribed on all; the same release heard from
//!   several masters counts as one wake-up), the holder's TTL, or the fallback poll. A round
//!   that won a quorum too late (its validity ran out) gives back with a release
//!   notification, as waiters may wait for one.
//! - **predecessor**: a FIFO queue on each master with a wake-up for the head only. The order
//!   must agree across masters, or each master's head differs and nobody wins a majority. So the
//!   ticket is taken in two phases (Skeen's total-order multicast): each master hands out a
//!   tentative ticket, the client takes the largest as final and writes it to every master, and a
//!   master never grants to a tentative head. A waiter keeps what it has won while it waits for
//!   the rest (it is first in line everywhere anyway), and gives it back only if some master's
//!   queue puts another waiter first.
//!
//! **Unknown outcomes and clean-up.** A master whose answer to a take was lost may have granted
//! it. An acquisition that fails after such a take gives back on every master (owner-checked
//! delete and queue exit, through the janitor, retried until each master answers) and waits,
//! at most `resolve_timeout` past its deadline, until at least N − quorum + 1 masters (3 of 5)
//! confirmed. The rule: the attempt certainly does not hold the lock once fewer than a quorum
//! of masters could still hold its owner value, since a grant needs a quorum; the masters that
//! did not answer yet may still hold it until they do (the janitor goes on) or their TTL ends,
//! which delays the next holder but never makes a second one. Then the outcome is
//! [`LockError::Withdrawn`]; without enough confirmations it stays unknown
//! ([`LockError::Connection`]). Unlike the single-master recipe, a lost grant is never claimed
//! after the deadline: the spec counts a grant's validity from the start of the round that won
//! it, that round is the one whose answers were lost, and the spec's own rule for a failed
//! attempt is to unlock every instance. A release a master did not answer is retried by the
//! janitor until that master confirms it, so the key goes when it is back, not at its TTL.
//! Each master has a janitor of its own, so a paused master does not hold up the give-backs on
//! the others.
//!
//! Fencing token: the largest per-master counter in the winning quorum, and a release raises
//! every master's counter to that token, so the next winner (whose quorum shares a master with
//! ours) gets a larger one. **Redlock cannot promise monotonic tokens under faults**: a lock that
//! expires while held, a master that restarts without persistence, or a release that does not
//! reach the shared master lets the next quorum see only smaller counters.
//!
//! **Lock kinds.** The mutex and the reentrant lock as above; the **read-write lock** runs the
//! single-master queue scripts of `shared.rs` on every master and holds with a majority of
//! grants, under either strategy: the claim queues with the predecessor's two-phase ticket
//! (a tentative entry is never granted and blocks those behind it; the final ticket is the
//! largest, the same on every master), so every master orders the queue alike and grants the
//! same readers or the same writer. A waiter that won some masters keeps them while no master
//! puts another waiter first, and otherwise gives back the grants but keeps its entry, as the
//! mutex's predecessor does. Herd waiters hear every release on `K:released` of every master;
//! predecessor waiters only the grants a change made theirs. Safe by the mutex's argument: a
//! writer's majority and any reader's majority share a master, and no master grants a writer
//! beside anyone (a final ticket can put an entry ahead of one already granted there, so the
//! scripts check what holds as well as the queue order).
//!
//! The **semaphore** is left out: over independent masters with a majority quorum it is not
//! safe for N ≥ 2 permits. Each master grants N, a holder needs 3 of 5 masters, and (N + 1)
//! holders × 3 grants ≤ 5 masters × N permits whenever N ≥ 2 (2 permits: 3 holders × 3 = 9 ≤
//! 10), so N + 1 clients can each win a different majority at once; only N = 1, the mutex, is
//! safe. A safe one needs a quorum q with (N + 1) × q > 5 × N: 4 of 5 masters for 2 or 3
//! permits, all 5 from 4 permits on, which gives up the fault tolerance a majority buys. The
//! majority version as an expected-unsafe finding would belong with the calibrations.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::join_all;
use futures::stream::FuturesUnordered;
use rand::Rng;
use tokio::task::JoinHandle;

use crate::recipe::deadline::Budget;
use crate::recipe::janitor::{Janitor, confirmed};
use crate::recipe::{
    Claim, Lease, LockError, Recipe, RecipeConfig, Strategy, Tally, check_strategy,
};
use crate::service::redis::recipe::cleanup::{GiveBack, RedisJanitorCtx, Target};
use crate::service::redis::recipe::common::{
    Held, NodeSource, Poll, RedisHandle, ReleaseKind, Waiter, Watchdogs, entry_ttl,
    is_rwlock_owner, new_client_id, owner_value, queue_prompt, valid_until, wake_message,
};
use crate::service::redis::recipe::scripts::{Keys, Notify, QueueEntry, TicketMode};
use crate::service::redis::recipe::server::{Attempt, FairTake, Server};
use crate::service::redis::recipe::shared::SharedTake;
use crate::service::redis::recipe::wait::{Grant, Hearing, Progress, Take, Taker, acquire_loop};
use crate::system::System;

/// Redlock tuning beyond [`RecipeConfig`].
#[derive(Debug, Clone)]
pub struct RedlockOptions {
    /// Deadline for one master in a round (and in a release); `None` for TTL/200 (50 ms for a
    /// 10 s TTL, the spec's example range is 5-50 ms), at least 10 ms and at most the request
    /// timeout. Small against the TTL, so a dead or paused master costs little validity.
    pub per_node_timeout: Option<Duration>,
    /// Upper bound of the random pause after a split vote.
    pub retry_delay_max: Duration,
}

impl Default for RedlockOptions {
    fn default() -> Self {
        RedlockOptions {
            per_node_timeout: None,
            retry_delay_max: Duration::from_millis(20),
        }
    }
}

/// A Redlock client over independent masters.
pub struct RedlockRecipe {
    nodes: Vec<Arc<Server>>,
    quorum: usize,
    cfg: RecipeConfig,
    opts: RedlockOptions,
    client_id: String,
    seq: AtomicU64,
    watchdogs: Watchdogs,
    /// One per master, in `nodes` order: gives back there, until it answers, what a release or
    /// a failed acquisition could not (shared with the release tasks that outlive their
    /// caller).
    janitors: Arc<Vec<Janitor<GiveBack>>>,
}

/// The confirmed give-backs after which an attempt whose outcome is unknown certainly does
/// not hold the lock: fewer than `quorum` of `n` masters can then still hold its owner value.
fn withdrawn_after(n: usize, quorum: usize) -> usize {
    (n + 1).saturating_sub(quorum)
}

/// The deadline for one master in a round (see [`RedlockOptions::per_node_timeout`]).
fn node_timeout(cfg: &RecipeConfig, opts: &RedlockOptions) -> Duration {
    opts.per_node_timeout
        .unwrap_or((cfg.ttl / 200).max(Duration::from_millis(10)))
        .min(cfg.request_timeout)
}

/// One round's answers.
struct Round {
    answers: Vec<Result<Attempt, LockError>>,
    started: Instant,
}

impl Round {
    fn granted(&self) -> impl Iterator<Item = (usize, &Attempt)> {
        self.answers
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.as_ref().ok().filter(|a| a.token > 0).map(|a| (i, a)))
    }
    /// True when every master that answered queues another waiter first (none granted, none
    /// named a holder's TTL): nothing to hear until the head moves.
    fn queued_behind(&self) -> bool {
        let answered: Vec<&Attempt> = self
            .answers
            .iter()
            .filter_map(|a| a.as_ref().ok())
            .collect();
        !answered.is_empty()
            && answered
                .iter()
                .all(|a| a.token == 0 && a.retry_within.is_none())
    }
    /// The owner value that holds at least `quorum` of the masters that answered (so at most
    /// one): a client that has won the lock, or whose round is winning it. Only herd takes name
    /// the holder of a refusing master.
    fn quorum_holder(&self, quorum: usize) -> Option<&str> {
        let mut held: HashMap<&str, usize> = HashMap::new();
        for a in self.answers.iter().filter_map(|a| a.as_ref().ok()) {
            if let (0, Some(h)) = (a.token, a.holder.as_deref()) {
                *held.entry(h).or_default() += 1;
            }
        }
        held.into_iter().find(|&(_, n)| n >= quorum).map(|(h, _)| h)
    }
    /// After a herd round that did not win, with `seen` the quorum holder the round before
    /// found: true to pause at random and take again, false to wait for a release (or the
    /// holder's TTL, or the fallback poll) as a round that won nothing does. A round that won
    /// some masters pauses on a split vote (no single owner holds a quorum of the masters that
    /// answered: nobody can win until some contender gives back) and when it sees a quorum
    /// holder for the first time (it may only just have won, and a short hold ends within the
    /// pause). The same holder seen again after the pause holds the lock: retrying after each
    /// pause would only win and give back the same free masters for as long as it holds (a
    /// holder on a bare 3 of 5 after `redlock-restart-delayed`: 80–217 requests per waiting
    /// client-second with a pause every round, 16–22 with the wait). Waiting from the first
    /// sighting cost the calm herd (hot-lock, 16 clients) 30 % more requests per acquisition
    /// and 13 % of its throughput: in step with every release, the waiters collide more.
    fn herd_pauses(&self, quorum: usize, seen: Option<&str>) -> bool {
        let holder = self.quorum_holder(quorum);
        self.granted().next().is_some() && (holder.is_none() || holder != seen)
    }
    /// The shortest wait any master that refused suggested (a holder's remaining TTL). A grant
    /// suggests nothing: what the round lacks is elsewhere, and retrying at once would only
    /// renew what it already won (a spin while a majority is down).
    fn retry_within(&self) -> Option<Duration> {
        self.answers
            .iter()
            .filter_map(|a| a.as_ref().ok().filter(|a| a.token == 0))
            .filter_map(|a| a.retry_within)
            .min()
    }
}

impl RedlockRecipe {
    /// Connects to the masters at `endpoints` (`host:port`), succeeding once a majority answers
    /// PING before `deadline`; the others are retried lazily on later calls.
    pub async fn connect(
        endpoints: &[String],
        cfg: RecipeConfig,
        opts: RedlockOptions,
        deadline: Instant,
    ) -> Result<RedlockRecipe, LockError> {
        if endpoints.is_empty() {
            return Err(LockError::Server(
                "Redlock needs at least one master endpoint (5 is the usual choice)".into(),
            ));
        }
        let nodes = endpoints
            .iter()
            .map(|e| Server::new(e, cfg.request_timeout, cfg.credentials.as_ref()).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let quorum = nodes.len() / 2 + 1;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ping = ::redis::cmd("PING");
            let pings = join_all(nodes.iter().map(|n| n.query::<String>(&ping, left))).await;
            let up = pings.iter().filter(|p| p.is_ok()).count();
            if up >= quorum {
                break;
            }
            if Instant::now() + Duration::from_millis(100) >= deadline {
                let why: Vec<String> = pings
                    .into_iter()
                    .filter_map(|p| p.err().map(|e| e.to_string()))
                    .collect();
                return Err(LockError::Connection(format!(
                    "only {up} of {} Redlock masters answered, {quorum} needed (start the masters or \
                     fix the endpoints): {}",
                    nodes.len(),
                    why.join("; ")
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let janitors = nodes
            .iter()
            .map(|n| {
                Janitor::new(
                    RedisJanitorCtx::new(Target::Node(n.clone()), &cfg),
                    cfg.retry,
                )
            })
            .collect();
        Ok(RedlockRecipe {
            quorum,
            janitors: Arc::new(janitors),
            nodes,
            cfg,
            opts,
            client_id: new_client_id(),
            seq: AtomicU64::new(0),
            watchdogs: Watchdogs::default(),
        })
    }

    fn per_node_timeout(&self) -> Duration {
        node_timeout(&self.cfg, &self.opts)
    }

    async fn round(
        &self,
        keys: &Keys,
        owner: &str,
        strategy: Strategy,
        shared: bool,
        mode: TicketMode,
        left: Duration,
    ) -> Round {
        let limit = self.per_node_timeout().min(left);
        let started = Instant::now();
        // One message for the whole round: a waiter it wakes on several masters wakes once. A
        // queue take's message is a queue prompt (it never releases); a shared claim's script
        // also sends it when a claim it lets in was waiting, as a release would.
        let wake = if shared {
            wake_message(owner)
        } else {
            queue_prompt(owner)
        };
        let take = FairTake {
            entry_ttl: entry_ttl(&self.cfg),
            mode,
            wake: &wake,
        };
        let take = &take;
        let shared_take = &SharedTake {
            entry_ttl: take.entry_ttl,
            permits: 1,
            wake: &wake,
            mode,
        };
        let answers = join_all(self.nodes.iter().map(|n| async move {
            match strategy {
                _ if shared => {
                    n.shared_acquire(keys, owner, self.cfg.ttl, shared_take, limit)
                        .await
                }
                Strategy::Herd => n.herd_acquire(keys, owner, self.cfg.ttl, limit).await,
                _ => n.fair_acquire(keys, owner, self.cfg.ttl, take, limit).await,
            }
        }))
        .await;
        Round { answers, started }
    }

    /// Gives back what `owner` holds on the masters `which` (all when `None`), waiting at most
    /// `limit` for each. A give-back during an acquisition carries no token (0): nothing was
    /// held, so no master's counter needs raising.
    async fn release_on(
        &self,
        which: Option<&[usize]>,
        keys: &Keys,
        owner: &str,
        notify: Notify,
        entry: QueueEntry,
        limit: Duration,
    ) -> Vec<Result<bool, LockError>> {
        let wake = match notify {
            Notify::Waiters => Some(wake_message(owner)),
            Notify::QueueHead => Some(queue_prompt(owner)),
            Notify::Nobody => None,
        };
        // A read or write claim's give-back may let others in whatever the caller says: its
        // script tells exactly those.
        let shared = is_rwlock_owner(owner).then(|| wake_message(owner));
        let entry_ttl = entry_ttl(&self.cfg);
        join_all(
            self.nodes
                .iter()
                .enumerate()
                .filter(|(i, _)| which.is_none_or(|w| w.contains(i)))
                .map(|(_, n)| {
                    let (wake, shared) = (wake.as_deref(), shared.as_deref());
                    async move {
                        match shared {
                            Some(msg) => {
                                let e = (entry, entry_ttl);
                                n.shared_release(keys, owner, 0, e, msg, limit).await
                            }
                            None => n.release(keys, owner, 0, wake, entry, limit).await,
                        }
                    }
                }),
        )
        .await
    }

    /// Subscribes `waiter` to `channel` on every master, each within `limit`, and returns as
    /// soon as one master has taken it (true) or every master has failed or `limit` passed
    /// (false), with the subscribing tasks. A waiter needs one master to hear a release, which
    /// every master publishes; the others go on in their tasks, so a slow or dead master holds
    /// up neither this wait nor the next take, and none is cut off half-way (a subscription
    /// dropped between its route and its SUBSCRIBE would stay routed).
    async fn subscribe_all(
        &self,
        channel: &str,
        waiter: &Waiter,
        limit: Duration,
    ) -> (bool, Vec<JoinHandle<()>>) {
        let (done, mut answers) = tokio::sync::mpsc::channel(self.nodes.len());
        let tasks = self
            .nodes
            .iter()
            .map(|n| {
                let (n, channel, done) = (n.clone(), channel.to_string(), done.clone());
                let (id, tx) = (waiter.id, waiter.tx.clone());
                tokio::spawn(async move {
                    let ok = n.subscribe(&channel, id, tx, limit).await.is_ok();
                    let _ = done.send(ok).await;
                })
            })
            .collect();
        drop(done);
        let first = async {
            while let Some(ok) = answers.recv().await {
                if ok {
                    return true;
                }
            }
            false
        };
        let heard = tokio::time::timeout(limit, first).await.unwrap_or(false);
        (heard, tasks)
    }
}

/// The Redlock steps of the shared acquire loop: a take is a round on every master.
struct RoundTaker<'a> {
    recipe: &'a RedlockRecipe,
    key: &'a str,
    keys: Keys,
    owner: String,
    strategy: Strategy,
    /// A read or write claim: it queues under either strategy (see the module doc).
    shared: bool,
    deadline: Instant,
    /// Where this attempt's wake-ups come (all releases for the herd, its own for a queue).
    channel: String,
    /// Whether a master has taken the waiter's subscription.
    subscribed: bool,
    /// The subscribing tasks, one a master and attempt (see `subscribe_all`): the unsubscribe
    /// waits for them, so that no subscription outlives the acquisition.
    subscribing: Vec<JoinHandle<()>>,
    /// The ticket phase (predecessor): tentative until a round names the largest ticket.
    mode: TicketMode,
    /// Herd: the owner the last round found holding a quorum, if any.
    quorum_holder: Option<String>,
}

impl RoundTaker<'_> {
    /// Whether the attempt queues (two-phase tickets, partial grants kept while in line):
    /// predecessor, and a read or write claim under either strategy.
    fn queues(&self) -> bool {
        self.strategy == Strategy::Predecessor || self.shared
    }

    /// After a round that did not win: gives back what it won where keeping it would block
    /// others (a queue puts another waiter first; any herd round), `maybe` being the masters
    /// that granted or did not answer.
    async fn give_back(
        &self,
        round: &Round,
        granted: &[usize],
        maybe: &[usize],
        progress: &mut Progress,
    ) {
        let r = self.recipe;
        // Between rounds a slow master costs the round, not the wait: give back within the
        // per-node deadline, as the spec accepts.
        let limit = r.per_node_timeout();
        if self.queues() {
            // Some master queues another waiter first: what we won elsewhere would block it.
            let behind = round
                .answers
                .iter()
                .any(|a| matches!(a, Ok(a) if a.token == 0 && a.retry_within.is_none()));
            if behind && !granted.is_empty() {
                progress.requests += maybe.len() as u64;
                let (notify, entry) = (Notify::QueueHead, QueueEntry::Keep);
                r.release_on(Some(maybe), &self.keys, &self.owner, notify, entry, limit)
                    .await;
            }
        } else if !maybe.is_empty() {
            // Give back silently: the lock was never free for anyone else to take. Except after
            // a round that won a quorum but too late (its validity ran out): the other waiters
            // saw a quorum holder and wait for its release, so this give-back is one.
            progress.requests += maybe.len() as u64;
            let notify = if granted.len() >= r.quorum {
                Notify::Waiters
            } else {
                Notify::Nobody
            };
            let entry = QueueEntry::Leave;
            r.release_on(Some(maybe), &self.keys, &self.owner, notify, entry, limit)
                .await;
        }
    }
}

impl Taker for RoundTaker<'_> {
    async fn take(&mut self, left: Duration, progress: &mut Progress) -> Result<Take, LockError> {
        let r = self.recipe;
        progress.requests += r.nodes.len() as u64;
        let round = r
            .round(
                &self.keys,
                &self.owner,
                self.strategy,
                self.shared,
                self.mode,
                left,
            )
            .await;
        for (a, janitor) in round.answers.iter().zip(r.janitors.iter()) {
            match a {
                // This master answers again: what waits for it may go now.
                Ok(_) => janitor.cluster_answered(),
                Err(e) if e.is_indeterminate() => progress.unanswered = Some(e.clone()),
                Err(_) => {}
            }
        }
        let granted: Vec<usize> = round.granted().map(|(i, _)| i).collect();
        // A master that did not answer in time may still have granted: undo there too.
        let maybe: Vec<usize> = round
            .answers
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a, Ok(a) if a.token > 0) || a.is_err())
            .map(|(i, _)| i)
            .collect();
        // The spec's validity: TTL − round time − drift, counted from the round's start.
        let valid = valid_until(round.started, r.cfg.ttl);
        if granted.len() >= r.quorum && valid > Instant::now() {
            return Ok(Take::Granted(Grant {
                token: round.granted().map(|(_, a)| a.token).max().unwrap_or(0),
                ticket: match self.mode {
                    TicketMode::Final(t) => Some(t),
                    _ => None,
                },
                granted_at: round.started,
            }));
        }
        if self.queues() && self.mode == TicketMode::Tentative {
            // Phase two: the largest tentative ticket becomes ours on every master.
            let t = round
                .answers
                .iter()
                .filter_map(|a| a.as_ref().ok().and_then(|a| a.ticket))
                .max();
            if let Some(t) = t {
                self.mode = TicketMode::Final(t);
                return Ok(Take::Again(None));
            }
        }
        self.give_back(&round, &granted, &maybe, progress).await;
        // Fewer than a quorum answered: no round can win until more masters are back, so the
        // next one waits out the retry backoff (a retryable error), not a split vote's short
        // pause or a wake-up from the masters that answered; otherwise a majority down makes
        // every waiter spin (3 of 5 masters killed for 7 s, 2 herd clients: 430 and 517
        // requests for the acquisitions that waited it out, 113 and 186 with the backoff).
        let answered = round.answers.iter().filter(|a| a.is_ok()).count();
        if answered < r.quorum {
            return Err(LockError::Unavailable(format!(
                "only {answered} of {} Redlock masters answered, {} needed",
                r.nodes.len(),
                r.quorum
            )));
        }
        if self.strategy == Strategy::Herd && !self.shared {
            let pauses = round.herd_pauses(r.quorum, self.quorum_holder.as_deref());
            self.quorum_holder = round.quorum_holder(r.quorum).map(str::to_string);
            if pauses {
                // Pause at random so the contenders spread out. Otherwise wait below; a holder
                // whose round won a quorum too late gives back with a wake-up (`give_back`),
                // so its waiters do not sit out the poll for it.
                let pause = rand::rng().random_range(Duration::ZERO..=r.opts.retry_delay_max);
                return Ok(Take::Again(Some(pause)));
            }
        }
        Ok(Take::Wait {
            poll: Poll::after(self.strategy, round.queued_behind(), &r.cfg),
            ttl_left: round.retry_within(),
        })
    }

    async fn subscribe(
        &mut self,
        waiter: &Waiter,
        left: Duration,
        progress: &mut Progress,
    ) -> Hearing {
        if self.subscribed {
            return Hearing::Already;
        }
        // An earlier attempt's master still answering: a second subscription of the same waiter
        // there would be counted twice and never ended; it may yet take.
        if self.subscribing.iter().any(|t| !t.is_finished()) {
            return Hearing::Deaf;
        }
        progress.requests += self.recipe.nodes.len() as u64;
        // A subscription has no validity to protect, unlike a round: it gets a request's
        // deadline, not the per-node one (a loaded machine answers a SUBSCRIBE in more than
        // 50 ms, and a waiter no master took would hear nothing).
        let limit = left.min(self.recipe.cfg.request_timeout);
        let (heard, tasks) = self
            .recipe
            .subscribe_all(&self.channel, waiter, limit)
            .await;
        self.subscribing.extend(tasks);
        self.subscribed = heard;
        if heard {
            Hearing::Subscribed
        } else {
            Hearing::Deaf
        }
    }

    /// A round reports each master's error in its answers, never as a whole: nothing to redo.
    async fn reconnect(&mut self, _deadline: Instant) {}

    fn unsubscribe(&mut self, waiter: &Waiter, progress: &mut Progress) {
        if self.subscribing.is_empty() {
            return;
        }
        let subscribing = std::mem::take(&mut self.subscribing);
        let nodes = self.recipe.nodes.clone();
        let (ch, id) = (self.channel.clone(), waiter.id);
        tokio::spawn(async move {
            // Every subscription settles first, so none is made after its unsubscribe.
            join_all(subscribing).await;
            join_all(nodes.iter().map(|n| n.unsubscribe(&ch, id))).await;
        });
        progress.requests += self.recipe.nodes.len() as u64;
    }

    async fn resolve(
        &mut self,
        err: LockError,
        unanswered: Option<LockError>,
        tally: &Tally,
    ) -> Result<Grant, LockError> {
        let r = self.recipe;
        let n = r.nodes.len();
        // Leave nothing behind on any master: queue entries and partial grants. One give-back,
        // so every master publishes the same message and a waiter counts it once.
        let give_back = GiveBack::new(&self.keys, &self.owner, 0).shared(self.shared);
        let give_backs = r.janitors.iter().map(|j| j.watch(give_back.clone()));
        let Some(unknown) = unanswered else {
            // The acquisition is over: the clean-up may take a whole request timeout before
            // the failure is reported, so a slow master does not keep a lock or queue entry a
            // late reply left there; then the janitors go on.
            let limit = Instant::now() + r.cfg.request_timeout;
            confirmed(give_backs, n, limit, tally).await;
            return Err(err);
        };
        let needed = withdrawn_after(n, r.quorum);
        let until = self.deadline + r.cfg.resolve_timeout;
        if confirmed(give_backs, needed, until, tally).await {
            Err(LockError::Withdrawn {
                key: self.key.to_string(),
                why: format!(
                    "{unknown}; {needed} of {n} masters confirmed the give-back, so fewer \
                     than a quorum ({}) can still hold this attempt's owner value",
                    r.quorum
                ),
            })
        } else {
            Err(unknown)
        }
    }
}

impl Recipe for RedlockRecipe {
    fn system(&self) -> System {
        System::Redlock
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        check_strategy(System::Redlock, strategy)?;
        if matches!(claim, Claim::Permit { .. }) {
            // Unsafe over a majority of masters from 2 permits on (see the module doc).
            return Err(LockError::KindUnsupported {
                system: System::Redlock,
                claim: claim.word(),
            });
        }
        let budget =
            Budget::acquire(key, deadline, self.cfg.request_timeout).retrying(self.cfg.retry);
        let keys = Keys::new(&self.cfg.prefix, key);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let shared = claim.is_shared_kind();
        let owner = owner_value(&self.client_id, seq, shared.then_some(claim));
        let channel = match strategy {
            Strategy::Herd => keys.released_channel(),
            _ => keys.wake_channel(&owner),
        };
        let mut taker = RoundTaker {
            recipe: self,
            key,
            keys,
            owner,
            strategy,
            shared,
            deadline,
            channel,
            subscribed: false,
            subscribing: Vec::new(),
            mode: TicketMode::Tentative,
            quorum_holder: None,
        };
        let grant = acquire_loop(&mut taker, &budget, tally).await?;
        let held = Held {
            source: NodeSource::Fixed(self.nodes.clone()),
            quorum: self.quorum,
            keys: taker.keys,
            owner: taker.owner,
            ttl: self.cfg.ttl,
            granted_at: grant.granted_at,
            release: match (shared, strategy) {
                (true, _) => ReleaseKind::Shared,
                (false, Strategy::Herd) => ReleaseKind::Unqueued,
                (false, _) => ReleaseKind::OwnerChecked,
            },
        };
        let renew = self.cfg.renew;
        Ok(self
            .watchdogs
            .grant(held, renew, key, grant.token, grant.ticket, tally))
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let h =
            crate::recipe::own_handle::<RedisHandle>(lease.handle, &lease.key, System::Redlock)?;
        self.watchdogs.stop(h.watchdog);
        let n = self.nodes.len();
        let limit = self.cfg.request_timeout;
        let wake = wake_message(&h.owner);
        // One task per master, so every release lands even after the outcome is decided and
        // the caller has moved on; the caller waits only while it is undecided.
        let mut answers: FuturesUnordered<_> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let (node, keys, owner) = (node.clone(), h.keys.clone(), h.owner.clone());
                let (wake, janitors) = (wake.clone(), self.janitors.clone());
                let shared = h.release == ReleaseKind::Shared;
                let entry = h.release.queue_entry();
                tokio::spawn(async move {
                    let answer = match shared {
                        true => {
                            let leave = (QueueEntry::Leave, Duration::ZERO);
                            node.shared_release(&keys, &owner, lease.token, leave, &wake, limit)
                                .await
                        }
                        false => {
                            node.release(&keys, &owner, lease.token, Some(&wake), entry, limit)
                                .await
                        }
                    };
                    if matches!(&answer, Err(e) if e.is_retryable()) {
                        // Until this master confirms it, its key would hold its vote until
                        // the TTL.
                        let give_back = GiveBack::new(&keys, &owner, lease.token)
                            .waking(&wake)
                            .shared(shared);
                        janitors[i].hand(give_back);
                    }
                    answer
                })
            })
            .collect();
        let (mut deleted, mut refused, mut errors) = (0, 0, Vec::new());
        while let Some(a) = answers.next().await {
            match a {
                Ok(Ok(true)) => deleted += 1,
                Ok(Ok(false)) => refused += 1,
                Ok(Err(e)) => errors.push(e),
                Err(e) => errors.push(LockError::Server(format!("release task failed: {e}"))),
            }
            if deleted >= self.quorum || refused > n - self.quorum {
                break;
            }
        }
        if deleted >= self.quorum {
            return Ok(());
        }
        match errors.into_iter().next() {
            // Masters that did not answer may still hold it: a majority may be ours yet.
            Some(e) if deleted + (n - deleted - refused) >= self.quorum => Err(e),
            _ => Err(LockError::Lost {
                key: lease.key,
                why: format!(
                    "the lock had already expired (or been taken over) on a majority of masters: \
                     {deleted} of {n} still held it, {} needed",
                    self.quorum
                ),
            }),
        }
    }

    async fn crash(self) {
        self.watchdogs.stop_all();
        join_all(self.nodes.iter().map(|n| n.shutdown())).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::deadline::drift;

    fn per_node_timeout(ttl: Duration) -> Duration {
        let cfg = RecipeConfig {
            ttl,
            ..RecipeConfig::default()
        };
        node_timeout(&cfg, &RedlockOptions::default())
    }

    #[test]
    fn drift_and_per_node_timeout_follow_the_spec() {
        assert_eq!(drift(Duration::from_secs(10)), Duration::from_millis(102));
        assert_eq!(
            per_node_timeout(Duration::from_secs(10)),
            Duration::from_millis(50)
        );
        assert_eq!(
            per_node_timeout(Duration::from_secs(1)),
            Duration::from_millis(10)
        );
        // Never longer than one request's deadline.
        assert_eq!(
            per_node_timeout(Duration::from_secs(1000)),
            RecipeConfig::default().request_timeout
        );
    }

    #[test]
    fn an_unknown_attempt_is_withdrawn_once_fewer_than_a_quorum_can_hold_it() {
        // (masters, quorum, confirmations needed): the unconfirmed ones are one short of a
        // quorum.
        for (n, needed) in [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (7, 4)] {
            let quorum = n / 2 + 1;
            assert_eq!(withdrawn_after(n, quorum), needed, "{n} masters");
            assert_eq!(n - needed, quorum - 1, "{n} masters");
        }
    }

    /// A round from one letter per master: `w` granted, `-` no answer, any other letter
    /// refused by the owner of that name.
    fn round(answers: &str) -> Round {
        let answer = |c: char| match c {
            'w' => Ok(Attempt {
                token: 7,
                ticket: None,
                retry_within: None,
                holder: None,
            }),
            '-' => Err(LockError::Connection("no answer".into())),
            h => Ok(Attempt {
                token: 0,
                ticket: None,
                retry_within: Some(Duration::from_secs(5)),
                holder: Some(h.to_string()),
            }),
        };
        Round {
            answers: answers.chars().map(answer).collect(),
            started: Instant::now(),
        }
    }

    #[test]
    fn a_herd_round_waits_behind_a_quorum_holder_seen_twice() {
        // (answers, the holder of a quorum, pause with no holder seen before, pause after a
        // round that saw `a` hold a quorum); else the round waits for a release.
        let cases = [
            // Another owner holds a bare quorum, the other masters are free: pause the first
            // time, wait when the round before saw the same holder.
            ("wwaaa", Some("a"), true, false),
            ("awawa", Some("a"), true, false),
            ("waaaa", Some("a"), true, false),
            ("w-aaa", Some("a"), true, false),
            // Another holder than the one seen before: pause.
            ("wwbbb", Some("b"), true, true),
            // Nobody holds a quorum of the masters that answered: a split vote, pause.
            ("wwaab", None, true, true),
            ("wabab", None, true, true),
            ("wwaa-", None, true, true),
            ("w-aa-", None, true, true),
            // Our own quorum, won too late: nobody else holds it, pause.
            ("wwwaa", None, true, true),
            // Won nothing: wait, whoever holds.
            ("aaabb", Some("a"), false, false),
            ("aabb-", None, false, false),
            // Three masters (quorum 2) and one.
            ("waa", Some("a"), true, false),
            ("wab", None, true, true),
            ("a", Some("a"), false, false),
        ];
        for (answers, holder, first, after_a) in cases {
            let r = round(answers);
            let quorum = answers.len() / 2 + 1;
            assert_eq!(r.quorum_holder(quorum), holder, "{answers}");
            assert_eq!(r.herd_pauses(quorum, None), first, "{answers}, none seen");
            assert_eq!(
                r.herd_pauses(quorum, Some("a")),
                after_a,
                "{answers}, a seen"
            );
        }
    }

    #[tokio::test]
    async fn connect_without_masters_names_the_fix() {
        let e = RedlockRecipe::connect(
            &[],
            RecipeConfig::default(),
            RedlockOptions::default(),
            Instant::now(),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.contains("at least one master"), "{e}");
    }
}
