//! etcd locks: the herd (one key, everyone retries on its deletion), the predecessor queue of
//! `client/v3/concurrency/mutex.go`, and the server-side `Lock` RPC (v3lock, which runs that same
//! queue on the server).
//!
//! Keys: herd holds `<prefix>/<key>`; predecessor and native queue under `<prefix>/<key>/` as
//! `<lease id in hex>` (so the two interoperate, as both are the concurrency mutex). One client
//! holds at most one lock per key at a time. Fencing token: the create revision of the key that
//! holds the lock; a key of ours found already queued is a leftover, removed and created anew,
//! so no two attempts share a token. All keys carry the client's lease, renewed at TTL/3 (see
//! `etcd_lease`), and herd and queue keys carry the id of the attempt that wrote them (a random
//! u64 in hex) as their value: every take-back compares it, so a clean-up never removes a lock
//! this client holds under the same lease.
//!
//! The server-side Lock writes its key itself (no value of ours to compare) and may still grant
//! it after we gave up, so a failed native acquire revokes the lease: that removes the key and
//! anything that lands later, ends every other lock held under the lease (their holders are
//! told), and the next acquire grants a fresh lease.

mod cleanup;
mod lease;
mod wait;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, LockOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
    TxnResponse, WatchStream,
};

use crate::recipe::deadline::Budget;
use crate::recipe::holders::Holders;
use crate::recipe::janitor::Janitor;
use crate::recipe::retry::Unanswered;
use crate::recipe::{
    Claim, Lease, LockError, Recipe, RecipeConfig, Strategy, Tally, check_strategy,
};
pub(crate) use crate::service::etcd::recipe::cleanup::etcd_err;
use crate::service::etcd::recipe::cleanup::{EtcdChore, maybe_applied};
use crate::service::etcd::recipe::lease::EtcdSession;
use crate::service::etcd::recipe::wait::{Wait, wait_claim, wait_deletes, watch_deletes};
use crate::sync::LockUnpoisoned;
use crate::system::System;

/// An etcd lock client: one connection, one lease, three strategies.
pub struct EtcdRecipe {
    client: Client,
    config: RecipeConfig,
    /// The current lease; replaced by a fresh one when it is found dead at the next acquire.
    session: tokio::sync::Mutex<Option<Arc<EtcdSession>>>,
    /// Revokes leases we gave up on and deletes keys a release or a failed acquisition left,
    /// until the cluster confirms it: they would hold the lock (herd) or a queue place until
    /// their lease ran out.
    janitor: Janitor<EtcdChore>,
    /// Values (attempt ids) of the keys that hold locks of this client now: a clean-up never
    /// removes them.
    live: Mutex<HashSet<String>>,
}

/// The server key that grants a lock, as a [`Lease`] is made from it.
struct HeldKey {
    name: String,
    /// Its create revision: the fencing token.
    rev: i64,
    /// The attempt's value it carries; empty for the server-side Lock's own key.
    value: String,
    /// Whether it took a place in a queue (its revision is then the queue position).
    queued: bool,
}

impl HeldKey {
    fn new(name: String, rev: i64, value: &str, queued: bool) -> HeldKey {
        HeldKey {
            name,
            rev,
            value: value.to_string(),
            queued,
        }
    }
}

/// What `release` needs: the key that holds the lock and its create revision.
struct Handle {
    key: String,
    create_revision: i64,
    /// The value our key carries (empty for native: the server writes the key).
    value: String,
    holders: Arc<Holders>,
    holder: u64,
}

/// One acquisition, across the tries its retryable errors cost.
struct Attempt {
    /// The value its herd or queue keys carry: a random id. The lease alone does not tell
    /// attempts apart, and a client may hold one key while acquiring another; the same value
    /// on every try lets a later try find a put of an earlier one that landed unanswered.
    value: String,
    /// Leases under which a write of this attempt went unanswered (it may land later).
    unanswered: Unanswered,
    /// The queue key it made (predecessor), to take back if it fails in the end.
    queued: Mutex<Option<String>>,
}

impl Attempt {
    fn new() -> Attempt {
        Attempt {
            value: format!("{:016x}", rand::random::<u64>()),
            unanswered: Unanswered::default(),
            queued: Mutex::new(None),
        }
    }
}

/// The guard of a take-back: the key still carries this attempt's value.
fn carries(key: &str, value: &str) -> Compare {
    Compare::value(key, CompareOp::Equal, value)
}

/// The error for acquiring a key this client already holds (one acquisition per key per client).
fn already_held(key: &str) -> LockError {
    LockError::Server(format!(
        "this client already holds '{key}': release it before acquiring it again"
    ))
}

/// `opts` with `access`'s login (when it has one) and TLS (when it has certificates), and the
/// URLs of `endpoints` in the scheme that goes with it: what every etcd client of lockbench
/// (recipes, the target's key listing) connects with.
pub fn with_access(
    endpoints: &[String],
    mut opts: ConnectOptions,
    access: Option<&crate::recipe::Credentials>,
) -> (Vec<String>, ConnectOptions) {
    let mut urls = urls(endpoints);
    if let Some(c) = access {
        if c.logs_in() {
            opts = opts.with_user(c.user.clone().unwrap_or_default(), c.password.clone());
        }
        if let Some(t) = &c.tls {
            let mut tls = etcd_client::TlsOptions::new()
                .ca_certificate(etcd_client::Certificate::from_pem(&t.ca_pem));
            if let Some((cert, key)) = &t.identity {
                tls = tls.identity(etcd_client::Identity::from_pem(cert, key));
            }
            opts = opts.with_tls(tls);
            urls = urls
                .into_iter()
                .map(|u| u.replacen("http://", "https://", 1))
                .collect();
        }
    }
    (urls, opts)
}

/// `endpoints` as the URLs etcd's client dials: `host:port` gets `http://`.
pub fn urls(endpoints: &[String]) -> Vec<String> {
    endpoints
        .iter()
        .map(|e| {
            if e.contains("://") {
                e.clone()
            } else {
                format!("http://{e}")
            }
        })
        .collect()
}

impl EtcdRecipe {
    /// Connects to `endpoints` (`host:port` each) and grants this client's lease, giving up
    /// after three request timeouts.
    pub async fn connect(endpoints: &[String], config: RecipeConfig) -> Result<Self, LockError> {
        let limit = config.request_timeout * 3;
        // No per-request gRPC timeout: it would also cut watch streams and the blocking Lock
        // RPC; every call gets its own deadline instead.
        // require_leader: a member cut off from the leader refuses requests and cancels our
        // watches instead of leaving a waiter to hear nothing from it until its deadline.
        let (urls, opts) = with_access(
            endpoints,
            ConnectOptions::new()
                .with_connect_timeout(config.request_timeout)
                .with_require_leader(true),
            config.credentials.as_ref(),
        );
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
        let janitor = Janitor::new((client.clone(), config.request_timeout), config.retry);
        Ok(EtcdRecipe {
            client,
            config,
            session: tokio::sync::Mutex::new(Some(Arc::new(session))),
            janitor,
            live: Mutex::new(HashSet::new()),
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
    /// package would open a new session). One grant request; the caller retries.
    async fn live_session(&self, tally: &Tally) -> Result<Arc<EtcdSession>, LockError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref()
            && !s.is_dead()
        {
            return Ok(s.clone());
        }
        if let Some(old) = slot.take() {
            // We gave up on it, but the server may still count it alive (it counts the TTL
            // from when a renewal arrived, and a new leader grants every lease a fresh TTL):
            // revoke it, until confirmed, so its keys go as soon as the cluster answers.
            self.janitor.hand(EtcdChore::Revoke(old.id));
        }
        tally.requests(1);
        let fresh = Arc::new(EtcdSession::grant(&self.client, &self.config).await?);
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Removes our key `target` (while `guard` holds) in the background, until confirmed.
    fn take_back(&self, target: &str, guard: Option<Compare>) {
        self.janitor.hand(EtcdChore::Delete {
            target: target.to_string(),
            guard,
        });
    }

    fn lock_name(&self, key: &str) -> String {
        format!("{}/{}", self.config.prefix.trim_end_matches('/'), key)
    }

    fn is_live(&self, value: &[u8]) -> bool {
        let live = self.live.locked();
        live.contains(String::from_utf8_lossy(value).as_ref())
    }

    /// Removes a key of our lease that an earlier attempt left (a lost answer): guarded by its
    /// create revision and value, so neither a newer incarnation nor a lock we hold can go.
    async fn remove_leftover(
        &self,
        key: &str,
        target: &str,
        kv: &etcd_client::KeyValue,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<(), LockError> {
        if !kv.value().is_empty() && self.is_live(kv.value()) {
            return Err(already_held(key));
        }
        let txn = Txn::new()
            .when([
                Compare::create_revision(target, CompareOp::Equal, kv.create_revision()),
                Compare::value(target, CompareOp::Equal, kv.value().to_vec()),
            ])
            .and_then([TxnOp::delete(target, None)]);
        tally.requests(1);
        let mut c = self.client.clone();
        budget
            .run("delete txn", c.txn(txn))
            .await?
            .map_err(|e| etcd_err("leftover delete", e))?;
        Ok(())
    }

    /// The lease of a grant, unless the session died while the attempt waited (its
    /// keep-alive gave up: the server still counts the lease, but nobody renews it, so the
    /// lock would be lost within a TTL of the grant). Then the key is taken back and the
    /// error is retryable: the acquisition tries again on a fresh session, as etcd's
    /// concurrency package fails a Lock whose session is done.
    fn lease(
        &self,
        key: &str,
        session: &EtcdSession,
        held: HeldKey,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        if session.is_dead() {
            let guard = Compare::create_revision(held.name.as_str(), CompareOp::Equal, held.rev);
            self.take_back(&held.name, Some(guard));
            return Err(LockError::Unavailable(format!(
                "granted '{key}' on lease {:x} after its keep-alive gave up: taken back, trying \
                 again on a fresh lease",
                session.id
            )));
        }
        let HeldKey {
            name,
            rev,
            value,
            queued,
        } = held;
        if !value.is_empty() {
            self.live.locked().insert(value.clone());
        }
        let (holder, lost) = session.holders.register();
        let acquired_at = Instant::now();
        Ok(Lease {
            key: key.to_string(),
            token: rev as u64,
            acquired_at,
            ttl: session.ttl,
            // The server counts the lease from the last renewal it acknowledged, sent before
            // this grant: a holder stopped now is overtaken this much sooner than a TTL on.
            ttl_spent: acquired_at.saturating_duration_since(session.renewed_at()),
            wakeups: tally.wakeup_count(),
            requests: tally.request_count(),
            fallback_polls: tally.fallback_poll_count(),
            queue_position: queued.then_some(rev as u64),
            lost,
            handle: Box::new(Handle {
                key: name,
                create_revision: rev,
                value,
                holders: session.holders.clone(),
                holder,
            }),
        })
    }

    /// Creates `target` holding the attempt's value under lease `lease` unless it exists,
    /// reading it in the same round trip when it does. A request the deadline cut short is
    /// taken back (guarded by the value, so nothing but this attempt's key is removed); one
    /// whose outcome is unknown is noted in `attempt` and returns its error: the acquisition
    /// tries again (a put that landed is found by its value), and if it fails in the end
    /// withdraws by revoking the lease ([`EtcdRecipe::withdraw`]), which also covers a put that
    /// lands after a delete found nothing.
    async fn put_if_absent(
        &self,
        target: &str,
        attempt: &Attempt,
        lease: i64,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<TxnResponse, LockError> {
        let value = attempt.value.as_str();
        let txn = Txn::new()
            .when([Compare::create_revision(target, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                target,
                value,
                Some(PutOptions::new().with_lease(lease)),
            )])
            .or_else([TxnOp::get(target, None)]);
        tally.requests(1);
        let mut c = self.client.clone();
        let answer = budget
            .run("txn", c.txn(txn))
            .await
            .and_then(|r| r.map_err(|e| etcd_err("create-if-absent txn", e)));
        if answer.is_ok() {
            self.janitor.cluster_answered();
        }
        if let Err(e) = &answer {
            if e.is_indeterminate() {
                attempt.unanswered.note(lease, e);
            } else if maybe_applied(e) {
                // The deadline cut the request short, yet the put may have landed: take back
                // what this attempt may have made.
                self.take_back(target, Some(carries(target, value)));
            }
        }
        answer
    }

    /// One try of the herd for `attempt` (a put of an earlier try that landed unanswered is
    /// found by its value and taken as the grant).
    async fn acquire_herd(
        &self,
        key: &str,
        attempt: &Attempt,
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
        loop {
            // A failed attempt reads the holder's key in the same round trip: one of our own
            // lease is this attempt's (an earlier try's put landed unanswered: granted) or a
            // leftover of an earlier attempt, which we would otherwise wait for.
            let value = attempt.value.as_str();
            let resp = self
                .put_if_absent(&name, attempt, session.id, budget, tally)
                .await?;
            if resp.succeeded() {
                let rev = resp.header().map(|h| h.revision()).unwrap_or(0);
                let held = HeldKey::new(name, rev, value, false);
                return self.lease(key, &session, held, tally);
            }
            if let Some(TxnOpResponse::Get(g)) = resp.op_responses().first()
                && let Some(kv) = g.kvs().first()
                && kv.lease() == session.id
            {
                if kv.value() == value.as_bytes() {
                    let held = HeldKey::new(name, kv.create_revision(), value, false);
                    return self.lease(key, &session, held, tally);
                }
                self.remove_leftover(key, &name, kv, budget, tally).await?;
                continue;
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

    /// One try of the predecessor queue for `attempt`; the key it queued under is noted in
    /// the attempt (to be taken back if the acquisition fails in the end). A later try finds
    /// this attempt's key by its value and keeps its place (and create revision) in the queue.
    async fn acquire_predecessor(
        &self,
        key: &str,
        attempt: &Attempt,
        wait: Wait,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        let session = self.live_session(tally).await?;
        let dir = format!("{}/", self.lock_name(key));
        let mine = match wait.claim {
            Claim::Exclusive => format!("{dir}{:x}", session.id),
            other => format!("{dir}{:x}-{}", session.id, other.word()),
        };
        // Take a place in the queue. A key this lease already has there is this attempt's (an
        // earlier try's put landed) or a leftover of an earlier attempt: that one is removed
        // and the attempt queues anew, so every attempt gets a fresh create revision (its
        // fencing token) rather than reusing a stale one.
        let value = attempt.value.as_str();
        let my_rev = loop {
            let resp = self
                .put_if_absent(&mine, attempt, session.id, budget, tally)
                .await?;
            if resp.succeeded() {
                break resp.header().map(|h| h.revision()).unwrap_or(0);
            }
            match resp.op_responses().first() {
                Some(TxnOpResponse::Get(g)) => match g.kvs().first() {
                    Some(kv) if kv.value() == value.as_bytes() => break kv.create_revision(),
                    Some(kv) => self.remove_leftover(key, &mine, kv, budget, tally).await?,
                    None => continue, // gone between the compare and the read
                },
                _ => break 0,
            }
        };
        *attempt.queued.locked() = Some(mine.clone());
        if my_rev == 0 {
            return Err(LockError::Server(format!(
                "etcd gave no create revision for '{mine}'"
            )));
        }
        let poll = self.config.fallback_poll;
        if wait.claim == Claim::Exclusive && !wait.herd {
            wait_deletes(&self.client, &dir, &mine, my_rev, budget, poll, tally).await?;
        } else {
            wait_claim(&self.client, &dir, &mine, my_rev, wait, budget, poll, tally).await?;
        }
        if matches!(wait.claim, Claim::Permit { .. }) {
            self.mark_grant(&mine, value, session.id, budget, tally)
                .await?;
        }
        let held = HeldKey::new(mine, my_rev, value, true);
        self.lease(key, &session, held, tally)
    }

    /// A permit's grant is a change the waiter behind may be watching for (see
    /// [`crate::recipe::claim`]): the key is written again, guarded by our value, which moves
    /// its mod revision past its create revision.
    async fn mark_grant(
        &self,
        mine: &str,
        value: &str,
        lease: i64,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<(), LockError> {
        let txn = Txn::new()
            .when([carries(mine, value)])
            .and_then([TxnOp::put(
                mine,
                value,
                Some(PutOptions::new().with_lease(lease)),
            )]);
        tally.requests(1);
        let mut c = self.client.clone();
        let resp = budget
            .run("txn", c.txn(txn))
            .await?
            .map_err(|e| etcd_err("grant mark txn", e))?;
        if resp.succeeded() {
            Ok(())
        } else {
            Err(LockError::Lost {
                key: mine.to_string(),
                why: "our queue key vanished at the grant (lease expired?)".into(),
            })
        }
    }

    async fn acquire_native(
        &self,
        key: &str,
        attempt: &Attempt,
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
        let resp = match locked.and_then(|r| r.map_err(|e| etcd_err("lock", e))) {
            Ok(r) => r,
            Err(e) => {
                if e.is_indeterminate() {
                    attempt.unanswered.note(session.id, &e);
                }
                self.abandon_lease(&session, &e, tally).await;
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
                self.abandon_lease(&session, &e, tally).await;
                return Err(e);
            }
        };
        if rev == 0 {
            return Err(LockError::Lost {
                key: key.to_string(),
                why: "the lock key vanished right after Lock returned (lease expired?)".into(),
            });
        }
        let held = HeldKey::new(held, rev, "", true);
        self.lease(key, &session, held, tally)
    }

    /// After an acquisition whose outcome is unknown (a request went unanswered: the put may
    /// land later, even after a guarded delete found nothing, when a partition delays the
    /// forwarded proposal): revokes every lease the attempt wrote under while a request went
    /// unanswered (`leases`), asking until `until` (the janitor goes on after it). A revoked
    /// lease removes every key written under it and refuses any put that lands later, so once
    /// the server confirms it (or says the lease is already gone) the outcome is known:
    /// [`LockError::Withdrawn`]. No confirmation by `until` leaves the original, unknown error.
    /// The current lease is retired either way (its holders told), so its keep-alive stops and
    /// the next acquire grants a fresh lease.
    async fn withdraw(
        &self,
        key: &str,
        err: LockError,
        leases: &[i64],
        until: Instant,
        tally: &Tally,
    ) -> LockError {
        if let Some(s) = self.session.lock().await.as_ref()
            && leases.contains(&s.id)
        {
            s.holders.lose_all(&format!(
                "lease revoked after an acquisition with an unknown outcome: {err}"
            ));
        }
        for id in leases {
            if !self
                .janitor
                .confirm(EtcdChore::Revoke(*id), until, tally)
                .await
            {
                return err;
            }
        }
        let ids: Vec<String> = leases.iter().map(|id| format!("{id:x}")).collect();
        LockError::Withdrawn {
            key: key.to_string(),
            why: if ids.is_empty() {
                format!("{err}; no lease was granted, so no lock key was written")
            } else {
                format!(
                    "{err}; lease {} revoked, so nothing of this attempt holds the lock",
                    ids.join(", ")
                )
            },
        }
    }

    /// After a failed server-side Lock: the server runs the queue and may still put or grant
    /// our key after we gave up (the RPC is not cancelled on the server), and that key carries
    /// no value of ours to guard a delete with. Revoking the lease removes it and anything that
    /// lands later; the next acquire grants a fresh lease. Other locks held under this lease
    /// go too, and their holders are told.
    async fn abandon_lease(&self, session: &EtcdSession, why: &LockError, tally: &Tally) {
        // Revoked before the failure is reported (the key must not be granted to us after we
        // gave up), unless the server does not answer in a request timeout; then the janitor
        // goes on.
        let limit = Instant::now() + self.config.request_timeout;
        self.janitor
            .confirm(EtcdChore::Revoke(session.id), limit, tally)
            .await;
        session
            .holders
            .lose_all(&format!("lease revoked after a failed Lock: {why}"));
    }
}

impl Recipe for EtcdRecipe {
    fn system(&self) -> System {
        System::Etcd
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        check_strategy(System::Etcd, strategy)?;
        if claim != Claim::Exclusive && strategy == Strategy::Native {
            // The server-side Lock is a mutex: the plan never asks this.
            return Err(LockError::KindUnsupported {
                system: System::Etcd,
                claim: claim.word(),
            });
        }
        let budget =
            Budget::acquire(key, deadline, self.config.request_timeout).retrying(self.config.retry);
        let attempt = Attempt::new();
        let mut backoff = budget.backoff();
        let got = loop {
            let herd = strategy == Strategy::Herd;
            let tried = match strategy {
                Strategy::Herd if claim == Claim::Exclusive => {
                    self.acquire_herd(key, &attempt, &budget, tally).await
                }
                // The kinds that share the lock queue under either strategy; the herd's
                // waiters watch the whole queue.
                Strategy::Herd | Strategy::Predecessor => {
                    let wait = Wait { claim, herd };
                    self.acquire_predecessor(key, &attempt, wait, &budget, tally)
                        .await
                }
                Strategy::Native => self.acquire_native(key, &attempt, &budget, tally).await,
                // Turned away by `check_strategy` above; matched for completeness.
                other => Err(crate::recipe::unsupported(System::Etcd, other)),
            };
            match tried {
                Err(e) if e.is_retryable() => {
                    if !backoff.wait(deadline).await {
                        break Err(budget.timeout());
                    }
                }
                other => break other,
            }
        };
        let got = match (got, attempt.unanswered.last()) {
            (Err(_), Some(e)) => {
                let leases = attempt.unanswered.ids();
                let until = deadline + self.config.resolve_timeout;
                Err(self.withdraw(key, e, &leases, until, tally).await)
            }
            (Err(e), None) => {
                // A queue key this attempt made would hold a place (and, at the head, the
                // lock) until its lease ran out.
                // Taken back before the timeout is reported (its contract: nothing of the
                // attempt is left), unless the server does not answer in a request timeout;
                // then the janitor goes on.
                let queued = attempt.queued.locked().take();
                if let Some(mine) = queued {
                    let chore = EtcdChore::Delete {
                        guard: Some(carries(&mine, &attempt.value)),
                        target: mine,
                    };
                    let limit = Instant::now() + self.config.request_timeout;
                    self.janitor.confirm(chore, limit, tally).await;
                }
                Err(e)
            }
            (ok, _) => ok,
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
        let h = crate::recipe::own_handle::<Handle>(lease.handle, &lease.key, System::Etcd)?;
        h.holders.forget(h.holder);
        self.live.locked().remove(&h.value);
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
                if e.is_retryable() {
                    // Curator's guaranteed delete: until the server confirms it.
                    self.take_back(&h.key, Some(ours));
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

    async fn close(self) {
        // As etcd's concurrency package closes a session: the lease is revoked, so a put of
        // an attempt given up on, which the cluster may still commit (a proposal delayed by a
        // partition), is refused, and no key of ours waits out the TTL. Leases handed to the
        // janitor before go on being revoked meanwhile.
        if let Some(session) = self.session.into_inner() {
            let until = Instant::now() + self.config.request_timeout;
            let revoked = EtcdChore::Revoke(session.id);
            self.janitor
                .confirm(revoked, until, &Tally::default())
                .await;
        }
    }
}
