//! etcd locks: the herd (one key, everyone retries on its deletion), the predecessor queue of
//! `client/v3/concurrency/mutex.go`, and the server-side `Lock` RPC (v3lock, which runs that same
//! queue on the server).
//!
//! Keys: herd holds `<prefix>/<key>`; predecessor and native queue under `<prefix>/<key>/` as
//! `<lease id in hex>` (so the two interoperate, as both are the concurrency mutex). One client
//! holds at most one lock per key at a time. Fencing token: the create revision of the key that
//! holds the lock. All keys carry the client's lease, renewed at TTL/3 (see `etcd_lease`).

use std::sync::Arc;
use std::time::Instant;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, LockOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
    WatchStream,
};

use super::deadline::Budget;
use super::etcd_cleanup::{etcd_err, maybe_applied, take_back};
use super::etcd_lease::EtcdSession;
use super::etcd_wait::{wait_deletes, watch_deletes};
use super::holders::Holders;
use super::{Lease, LockError, Recipe, RecipeConfig, Strategy, Tally, check_strategy};
use crate::system::System;

const STRATEGIES: &[Strategy] = &[Strategy::Herd, Strategy::Predecessor, Strategy::Native];

/// An etcd lock client: one connection, one lease, three strategies.
pub struct EtcdRecipe {
    client: Client,
    config: RecipeConfig,
    /// The current lease; replaced by a fresh one when it is found dead at the next acquire.
    session: tokio::sync::Mutex<Option<Arc<EtcdSession>>>,
    /// Our keys whose removal got no answer, with the guard that keeps the retry safe; the next
    /// acquire retries them, as they would hold the lock (herd) or a stale queue place.
    orphans: std::sync::Mutex<Vec<(String, Option<Compare>)>>,
}

/// What `release` needs: the key that holds the lock and its create revision.
struct Handle {
    key: String,
    create_revision: i64,
    holders: Arc<Holders>,
    holder: u64,
}

impl EtcdRecipe {
    /// Connects to `endpoints` (`host:port` each) and grants this client's lease, giving up
    /// after three request timeouts.
    pub async fn connect(endpoints: &[String], config: RecipeConfig) -> Result<Self, LockError> {
        let urls: Vec<String> = endpoints
            .iter()
            .map(|e| {
                if e.contains("://") {
                    e.clone()
                } else {
                    format!("http://{e}")
                }
            })
            .collect();
        let limit = config.request_timeout * 3;
        // No per-request gRPC timeout: it would also cut watch streams and the blocking Lock
        // RPC; every call gets its own deadline instead.
        // require_leader: a member cut off from the leader refuses requests and cancels our
        // watches instead of leaving a waiter to hear nothing from it until its deadline.
        let opts = ConnectOptions::new()
            .with_connect_timeout(config.request_timeout)
            .with_require_leader(true);
        let client = match tokio::time::timeout(limit, Client::connect(&urls, Some(opts))).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                return Err(LockError::Connection(format!(
                    "connect to etcd at {}: {e}; check the endpoints",
                    urls.join(",")
                )));
            }
            Err(_) => {
                return Err(LockError::Connection(format!(
                    "no connection to etcd at {} within {limit:?}: check the endpoints, or raise \
                     request_timeout",
                    urls.join(",")
                )));
            }
        };
        let session = EtcdSession::grant(&client, &config).await?;
        Ok(EtcdRecipe {
            client,
            config,
            session: tokio::sync::Mutex::new(Some(Arc::new(session))),
            orphans: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The current lease id, e.g. for a test that revokes it to expire this client's locks.
    pub async fn lease_id(&self) -> Option<i64> {
        self.session.lock().await.as_ref().map(|s| s.id)
    }

    /// When the last renewal of the current lease that the server acknowledged was sent: the
    /// server keeps the lease until at least this + TTL, and holders are told before that.
    pub async fn renewed_at(&self) -> Option<Instant> {
        self.session.lock().await.as_ref().map(|s| s.renewed_at())
    }

    /// The live lease, granting a new one if the last one expired (as etcd's concurrency
    /// package would open a new session).
    async fn live_session(&self, tally: &Tally) -> Result<Arc<EtcdSession>, LockError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref()
            && !s.is_dead()
        {
            return Ok(s.clone());
        }
        if let Some(old) = slot.take() {
            // We gave up on it, but the server may still count it alive for a moment (it
            // counts the TTL from when a renewal arrived): revoke it so its queue keys go now.
            let (mut c, id, limit) = (self.client.clone(), old.id, self.config.request_timeout);
            tokio::spawn(async move {
                let _ = tokio::time::timeout(limit, c.lease_revoke(id)).await;
            });
        }
        tally.requests(1);
        let fresh = Arc::new(EtcdSession::grant(&self.client, &self.config).await?);
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Removes our key after a failed acquisition; remembers it if the server did not answer.
    async fn take_back(&self, key: &str, target: &str, guard: Option<Compare>) {
        let limit = self.config.request_timeout;
        if !take_back(&self.client, key, target, guard.clone(), limit).await {
            self.orphan(target, guard);
        }
    }

    fn orphan(&self, target: &str, guard: Option<Compare>) {
        self.orphans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((target.to_string(), guard));
    }

    /// Retries the removals that got no answer before.
    async fn retry_orphans(&self) {
        let orphans = std::mem::take(&mut *self.orphans.lock().unwrap_or_else(|e| e.into_inner()));
        for (target, guard) in orphans {
            self.take_back(&target, &target, guard).await;
        }
    }

    fn lock_name(&self, key: &str) -> String {
        format!("{}/{}", self.config.prefix.trim_end_matches('/'), key)
    }

    fn lease(
        &self,
        key: &str,
        session: &EtcdSession,
        held_key: String,
        rev: i64,
        tally: &Tally,
        queued: bool,
    ) -> Lease {
        let (holder, lost) = session.holders.register();
        Lease {
            key: key.to_string(),
            token: rev as u64,
            acquired_at: Instant::now(),
            ttl: session.ttl,
            wakeups: tally.wakeup_count(),
            requests: tally.request_count(),
            fallback_polls: tally.fallback_poll_count(),
            queue_position: queued.then_some(rev as u64),
            lost,
            handle: Box::new(Handle {
                key: held_key,
                create_revision: rev,
                holders: session.holders.clone(),
                holder,
            }),
        }
    }

    async fn acquire_herd(
        &self,
        key: &str,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        let session = self.live_session(tally).await?;
        let name = self.lock_name(key);
        // No watch until the first attempt fails, so a free lock costs one request. After the
        // watch is up, one more attempt comes before any wait, so that a deletion between the
        // failed attempt and the watch cannot be missed; a deletion the watch reports that
        // happened before an attempt only costs one retry.
        let mut watch: Option<WatchStream> = None;
        let mut c = self.client.clone();
        loop {
            let txn = Txn::new()
                .when([Compare::create_revision(name.as_str(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(
                    name.as_str(),
                    format!("{:x}", session.id),
                    Some(PutOptions::new().with_lease(session.id)),
                )]);
            tally.requests(1);
            let answer = budget
                .run("txn", c.txn(txn))
                .await
                .and_then(|r| r.map_err(|e| etcd_err("lock txn", e)));
            let resp = match answer {
                Ok(r) => r,
                Err(e) => {
                    if maybe_applied(&e) {
                        // The put may have landed after all: take back a lock we may hold.
                        let ours = Compare::lease(name.as_str(), CompareOp::Equal, session.id);
                        self.take_back(key, &name, Some(ours)).await;
                    }
                    return Err(e);
                }
            };
            if resp.succeeded() {
                let rev = resp.header().map(|h| h.revision()).unwrap_or(0);
                return Ok(self.lease(key, &session, name, rev, tally, false));
            }
            let Some(w) = watch.as_mut() else {
                tally.requests(1);
                watch = Some(watch_deletes(&self.client, &name, budget).await?.0);
                continue;
            };
            tokio::select! {
                m = w.message() => match m {
                    Ok(Some(r)) if !r.canceled() => tally.wakeups(r.events().len() as u64),
                    // The stream broke (leader change, no leader, compaction): watch again,
                    // then retry.
                    _ => watch = None,
                },
                _ = tokio::time::sleep(self.config.fallback_poll) => tally.fallback_poll(),
                _ = tokio::time::sleep_until(budget.deadline().into()) => return Err(budget.timeout()),
            }
        }
    }

    async fn acquire_predecessor(
        &self,
        key: &str,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        let session = self.live_session(tally).await?;
        let dir = format!("{}/", self.lock_name(key));
        let mine = format!("{dir}{:x}", session.id);
        let mut c = self.client.clone();
        // Take a place in the queue, or find the one this lease already has.
        let txn = Txn::new()
            .when([Compare::create_revision(mine.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                mine.as_str(),
                "",
                Some(PutOptions::new().with_lease(session.id)),
            )])
            .or_else([TxnOp::get(mine.as_str(), None)]);
        tally.requests(1);
        let answer = budget
            .run("txn", c.txn(txn))
            .await
            .and_then(|r| r.map_err(|e| etcd_err("queue txn", e)));
        let resp = match answer {
            Ok(r) => r,
            Err(e) => {
                if maybe_applied(&e) {
                    // Our queue key may exist after all: leave nothing behind.
                    let ours = Compare::lease(mine.as_str(), CompareOp::Equal, session.id);
                    self.take_back(key, &mine, Some(ours)).await;
                }
                return Err(e);
            }
        };
        let my_rev = if resp.succeeded() {
            resp.header().map(|h| h.revision()).unwrap_or(0)
        } else {
            match resp.op_responses().first() {
                Some(TxnOpResponse::Get(g)) => g.kvs().first().map_or(0, |kv| kv.create_revision()),
                _ => 0,
            }
        };
        if my_rev == 0 {
            return Err(LockError::Server(format!(
                "etcd gave no create revision for '{mine}'"
            )));
        }
        let poll = self.config.fallback_poll;
        match wait_deletes(&self.client, &dir, &mine, my_rev, budget, poll, tally).await {
            Ok(()) => Ok(self.lease(key, &session, mine, my_rev, tally, true)),
            Err(e) => {
                self.take_back(
                    key,
                    &mine,
                    Some(Compare::create_revision(
                        mine.as_str(),
                        CompareOp::Equal,
                        my_rev,
                    )),
                )
                .await;
                Err(e)
            }
        }
    }

    async fn acquire_native(
        &self,
        key: &str,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        // The server wakes the queued waiters itself: this client cannot see those wake-ups.
        tally.hide_wakeups();
        let session = self.live_session(tally).await?;
        let name = self.lock_name(key);
        let mut c = self.client.clone();
        tally.requests(1);
        let locked = budget
            .run_blocking(c.lock(
                name.as_str(),
                Some(LockOptions::new().with_lease(session.id)),
            ))
            .await;
        // The server queues `<name>/<lease hex>` for us, so that is what a failure leaves.
        let queue_key = format!("{name}/{:x}", session.id);
        let resp = match locked.and_then(|r| r.map_err(|e| etcd_err("lock", e))) {
            Ok(r) => r,
            Err(e) => {
                let ours = Compare::lease(queue_key.as_str(), CompareOp::Equal, session.id);
                self.take_back(key, &queue_key, Some(ours)).await;
                return Err(e);
            }
        };
        let held = String::from_utf8_lossy(resp.key()).into_owned();
        // Lock answers with the key, not its create revision: read it for the fencing token.
        // We hold the lock by now, so this read gets its own request timeout rather than what
        // is left of the acquire deadline, and a failure gives the lock back.
        tally.requests(1);
        let read = Budget::cleanup(key, self.config.request_timeout, 1);
        let rev = match read
            .run("get", c.get(held.as_str(), None))
            .await
            .and_then(|r| r.map_err(|e| etcd_err("get lock key", e)))
        {
            Ok(r) => r.kvs().first().map_or(0, |kv| kv.create_revision()),
            Err(e) => {
                let ours = Compare::lease(held.as_str(), CompareOp::Equal, session.id);
                self.take_back(key, &held, Some(ours)).await;
                return Err(e);
            }
        };
        if rev == 0 {
            return Err(LockError::Lost {
                key: key.to_string(),
                why: "the lock key vanished right after Lock returned (lease expired?)".into(),
            });
        }
        Ok(self.lease(key, &session, held, rev, tally, true))
    }
}

impl Recipe for EtcdRecipe {
    fn system(&self) -> System {
        System::Etcd
    }

    fn strategies(&self) -> &'static [Strategy] {
        STRATEGIES
    }

    async fn acquire_counted(
        &self,
        key: &str,
        strategy: Strategy,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        check_strategy(System::Etcd, STRATEGIES, strategy)?;
        self.retry_orphans().await;
        let budget = Budget::acquire(key, deadline, self.config.request_timeout);
        let got = match strategy {
            Strategy::Herd => self.acquire_herd(key, &budget, tally).await,
            Strategy::Predecessor => self.acquire_predecessor(key, &budget, tally).await,
            Strategy::Native => self.acquire_native(key, &budget, tally).await,
        };
        if let Err(LockError::Lost { why, .. }) = &got {
            // The server showed us our lease is gone before the keep-alive noticed: retire it
            // now, so the next acquire grants a fresh one instead of failing again.
            if let Some(s) = self.session.lock().await.as_ref() {
                s.holders.lose_all(why);
            }
        }
        got
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let h = super::own_handle::<Handle>(lease.handle, &lease.key, System::Etcd)?;
        h.holders.forget(h.holder);
        // Delete only the incarnation of the key we created: after our lease expired, the same
        // name may hold someone else's lock. (Native locks too: Unlock would delete blindly.)
        let ours = Compare::create_revision(h.key.as_str(), CompareOp::Equal, h.create_revision);
        let txn = Txn::new()
            .when([ours.clone()])
            .and_then([TxnOp::delete(h.key.as_str(), None)]);
        let budget = Budget::cleanup(&lease.key, self.config.request_timeout, 1);
        let mut c = self.client.clone();
        let answer = budget
            .run("delete txn", c.txn(txn))
            .await
            .and_then(|r| r.map_err(|e| etcd_err("unlock txn", e)));
        match answer {
            Ok(r) if r.succeeded() => Ok(()),
            Ok(_) => Err(LockError::Lost {
                key: lease.key.clone(),
                why: "the lock key is gone or re-created by another client (lease expired?)".into(),
            }),
            Err(e) => {
                if e.is_indeterminate() {
                    self.orphan(&h.key, Some(ours));
                }
                Err(e)
            }
        }
    }

    async fn crash(self) {
        // Dropping the session stops the keep-alive; the lease then expires after its TTL and
        // takes our keys with it. No revoke, no delete: that is the point.
        drop(self.session.into_inner());
        drop(self.client);
    }
}
