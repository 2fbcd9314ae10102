//! One Redis server as the lock recipes see it: a self-reconnecting command connection, one
//! pub/sub connection whose messages are routed to the waiters that asked for them, and the
//! script calls with their deadlines. Also the pieces both Redis recipes share: waiting for a
//! notification, and the renewal watchdog.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubSink};
use ::redis::{RedisError, Script};
use futures::StreamExt;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::AbortHandle;

use super::redis_scripts::{
    FAIR_ACQUIRE_SCRIPT, HERD_ACQUIRE_SCRIPT, Keys, RELEASE_SCRIPT, RENEW_SCRIPT, TicketMode,
};
use super::{LockError, LostTrigger};

type Routes = Arc<Mutex<HashMap<String, Vec<(u64, UnboundedSender<Vec<u8>>)>>>>;

/// The pub/sub side of a node: subscriptions are reference-counted per channel and serialised
/// under one async lock, so a SUBSCRIBE can never overtake the UNSUBSCRIBE of the same channel.
#[derive(Default)]
struct PubSubState {
    sink: Option<PubSubSink>,
    alive: Arc<AtomicBool>,
    task: Option<AbortHandle>,
    counts: HashMap<String, usize>,
}

/// One Redis server.
pub(crate) struct Node {
    endpoint: String,
    client: ::redis::Client,
    conn: ConnectionManager,
    request_timeout: Duration,
    routes: Routes,
    pubsub: tokio::sync::Mutex<PubSubState>,
}

/// What one take attempt answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attempt {
    /// Fencing token, > 0 when granted.
    pub token: u64,
    /// Queue ticket (queue takes only).
    pub ticket: Option<u64>,
    /// How long to wait at most before trying again: `None` = until notified (or the fallback
    /// poll), else the holder's remaining TTL (after which the lock is free without a release).
    pub retry_within: Option<Duration>,
}

/// Maps a client error to the contract's error, naming the server.
pub(crate) fn lock_error(endpoint: &str, e: RedisError) -> LockError {
    // READONLY: we are talking to a demoted master, the caller must find the new one.
    if e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.code() == Some("READONLY")
    {
        LockError::Connection(format!("{endpoint}: {e}"))
    } else {
        LockError::Server(format!("{endpoint}: {e}"))
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().max(1) as u64
}

impl Node {
    /// A node whose connections open lazily and reconnect by themselves, so a server that is
    /// down now (a Redlock master) can serve later calls once it is back.
    pub fn new(endpoint: &str, request_timeout: Duration) -> Result<Node, LockError> {
        let client = ::redis::Client::open(format!("redis://{endpoint}/")).map_err(|e| {
            LockError::Server(format!(
                "'{endpoint}' is not a valid Redis address (use host:port): {e}"
            ))
        })?;
        let cfg = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(request_timeout))
            .set_response_timeout(Some(request_timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(200));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), cfg)
            .map_err(|e| lock_error(endpoint, e))?;
        Ok(Node {
            endpoint: endpoint.to_string(),
            client,
            conn,
            request_timeout,
            routes: Arc::default(),
            pubsub: tokio::sync::Mutex::default(),
        })
    }

    /// `127.0.0.1:port` of this server.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Runs `cmd` with a deadline of `limit` (capped by the request timeout).
    pub async fn query<T: ::redis::FromRedisValue>(
        &self,
        cmd: &::redis::Cmd,
        limit: Duration,
    ) -> Result<T, LockError> {
        let mut conn = self.conn.clone();
        let limit = limit.min(self.request_timeout);
        match tokio::time::timeout(limit, cmd.query_async::<T>(&mut conn)).await {
            Ok(r) => r.map_err(|e| lock_error(&self.endpoint, e)),
            Err(_) => Err(self.timed_out(limit)),
        }
    }

    fn timed_out(&self, limit: Duration) -> LockError {
        LockError::Connection(format!(
            "{} did not answer within {limit:?} (raise request_timeout if the server is just slow)",
            self.endpoint
        ))
    }

    async fn eval<T: ::redis::FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[String],
        limit: Duration,
    ) -> Result<T, LockError> {
        let mut inv = script.prepare_invoke();
        for k in keys {
            inv.key(*k);
        }
        for a in args {
            inv.arg(a);
        }
        let mut conn = self.conn.clone();
        let limit = limit.min(self.request_timeout);
        match tokio::time::timeout(limit, inv.invoke_async::<T>(&mut conn)).await {
            Ok(r) => r.map_err(|e| lock_error(&self.endpoint, e)),
            Err(_) => Err(self.timed_out(limit)),
        }
    }

    /// One herd take (`SET NX PX` plus the fencing `INCR`).
    pub async fn herd_acquire(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        limit: Duration,
    ) -> Result<Attempt, LockError> {
        let (token, pttl): (u64, i64) = self
            .eval(
                &HERD_ACQUIRE_SCRIPT,
                &[&keys.lock, &keys.fence],
                &[owner.to_string(), ms(ttl).to_string()],
                limit,
            )
            .await?;
        Ok(Attempt {
            token,
            ticket: None,
            // A negative PTTL means the key vanished meanwhile: try again at once.
            retry_within: Some(Duration::from_millis(pttl.max(0) as u64)),
        })
    }

    /// One queue take (enqueue or refresh, then take if at the head and free).
    pub async fn fair_acquire(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        entry_ttl: Duration,
        mode: TicketMode,
        limit: Duration,
    ) -> Result<Attempt, LockError> {
        let (mode, ticket) = mode.args();
        let (token, ticket, hint): (u64, u64, i64) = self
            .eval(
                &FAIR_ACQUIRE_SCRIPT,
                &[
                    &keys.lock,
                    &keys.fence,
                    &keys.queue,
                    &keys.expiry,
                    &keys.tickets,
                    &keys.tentative,
                ],
                &[
                    owner.to_string(),
                    ms(ttl).to_string(),
                    ms(entry_ttl).to_string(),
                    mode.to_string(),
                    ticket.to_string(),
                ],
                limit,
            )
            .await?;
        Ok(Attempt {
            token,
            ticket: Some(ticket),
            retry_within: (hint >= 0).then(|| Duration::from_millis(hint as u64)),
        })
    }

    /// Compare-and-delete plus queue exit; true if this call deleted `owner`'s lock.
    pub async fn release(
        &self,
        keys: &Keys,
        owner: &str,
        token: u64,
        notify: bool,
        keep_entry: bool,
        limit: Duration,
    ) -> Result<bool, LockError> {
        let deleted: i64 = self
            .eval(
                &RELEASE_SCRIPT,
                &[
                    &keys.lock,
                    &keys.fence,
                    &keys.queue,
                    &keys.expiry,
                    &keys.tentative,
                ],
                &[
                    owner.to_string(),
                    token.to_string(),
                    u8::from(notify).to_string(),
                    u8::from(keep_entry).to_string(),
                ],
                limit,
            )
            .await?;
        Ok(deleted == 1)
    }

    /// Extends `owner`'s lock; false if the lock is no longer `owner`'s.
    pub async fn renew(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        limit: Duration,
    ) -> Result<bool, LockError> {
        let ok: i64 = self
            .eval(
                &RENEW_SCRIPT,
                &[&keys.lock, &keys.expiry],
                &[owner.to_string(), ms(ttl).to_string()],
                limit,
            )
            .await?;
        Ok(ok == 1)
    }

    /// Routes messages on `channel` to `tx` (tagged `id`) until [`Node::unsubscribe`].
    /// Reconnects the pub/sub connection if it died, re-subscribing what it carried.
    pub async fn subscribe(
        &self,
        channel: &str,
        id: u64,
        tx: UnboundedSender<Vec<u8>>,
    ) -> Result<(), LockError> {
        let mut st = self.pubsub.lock().await;
        if st.sink.is_none() || !st.alive.load(Ordering::SeqCst) {
            self.reconnect_pubsub(&mut st).await?;
        }
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(channel.to_string())
            .or_default()
            .push((id, tx));
        let count = st.counts.entry(channel.to_string()).or_default();
        *count += 1;
        if *count == 1 {
            let mut sink = st.sink.clone().ok_or_else(|| {
                LockError::Connection(format!("{}: no pub/sub connection", self.endpoint))
            })?;
            let r = match tokio::time::timeout(self.request_timeout, sink.subscribe(channel)).await
            {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(lock_error(&self.endpoint, e)),
                Err(_) => Err(self.timed_out(self.request_timeout)),
            };
            if r.is_err() {
                // Undo, so the next waiter on this channel sends SUBSCRIBE again.
                st.counts.remove(channel);
                self.routes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(channel);
            }
            return r;
        }
        Ok(())
    }

    /// Stops routing `channel` to waiter `id`; unsubscribes when nobody else listens.
    pub async fn unsubscribe(&self, channel: &str, id: u64) {
        let mut st = self.pubsub.lock().await;
        if let Some(v) = self
            .routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(channel)
        {
            v.retain(|(i, _)| *i != id);
        }
        let Some(count) = st.counts.get_mut(channel) else {
            return;
        };
        *count = count.saturating_sub(1);
        if *count > 0 {
            return;
        }
        st.counts.remove(channel);
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(channel);
        if let Some(mut sink) = st.sink.clone() {
            // A failed UNSUBSCRIBE only costs stray messages nobody is routed to.
            let _ = tokio::time::timeout(self.request_timeout, sink.unsubscribe(channel)).await;
        }
    }

    async fn reconnect_pubsub(&self, st: &mut PubSubState) -> Result<(), LockError> {
        if let Some(t) = st.task.take() {
            t.abort();
        }
        let pubsub = tokio::time::timeout(self.request_timeout, self.client.get_async_pubsub())
            .await
            .map_err(|_| self.timed_out(self.request_timeout))?
            .map_err(|e| lock_error(&self.endpoint, e))?;
        let (mut sink, mut stream) = pubsub.split();
        for channel in st.counts.keys() {
            tokio::time::timeout(self.request_timeout, sink.subscribe(channel))
                .await
                .map_err(|_| self.timed_out(self.request_timeout))?
                .map_err(|e| lock_error(&self.endpoint, e))?;
        }
        let alive = Arc::new(AtomicBool::new(true));
        let routes = self.routes.clone();
        let flag = alive.clone();
        let task = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                let routes = routes.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(v) = routes.get(msg.get_channel_name()) {
                    for (_, tx) in v {
                        let _ = tx.send(msg.get_payload_bytes().to_vec());
                    }
                }
            }
            flag.store(false, Ordering::SeqCst);
        });
        st.sink = Some(sink);
        st.alive = alive;
        st.task = Some(task.abort_handle());
        Ok(())
    }

    /// Drops the pub/sub connection (the command connection goes with the last `Arc`).
    pub async fn shutdown(&self) {
        let mut st = self.pubsub.lock().await;
        if let Some(t) = st.task.take() {
            t.abort();
        }
        st.sink = None;
    }
}

/// A fresh client identity: owner values are `<client>:<sequence>`, unique per acquisition, so
/// a stale lease or a stray wake message can never be mistaken for a current one.
pub(crate) fn new_client_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

static NEXT_WAITER: AtomicU64 = AtomicU64::new(1);

/// The waiting side of one acquisition: notifications from every node arrive on one channel.
pub(crate) struct Waiter {
    pub id: u64,
    pub tx: UnboundedSender<Vec<u8>>,
    rx: UnboundedReceiver<Vec<u8>>,
    seen: HashSet<Vec<u8>>,
    pub wakeups: u64,
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
        }
    }

    /// Waits up to `at_most` for a notification. Each distinct message is one wake-up: the same
    /// release heard from several Redlock masters carries the same payload and wakes once.
    pub async fn wait(&mut self, at_most: Duration) {
        let first = match tokio::time::timeout(at_most, self.rx.recv()).await {
            Ok(Some(m)) => m,
            // Timed out (the fallback poll) or every sender gone: the caller tries again.
            _ => return,
        };
        if self.seen.insert(first) {
            self.wakeups += 1;
        }
        while let Ok(m) = self.rx.try_recv() {
            if self.seen.insert(m) {
                self.wakeups += 1;
            }
        }
    }
}

/// Renewal watchdogs of one recipe, so `crash` can stop them all.
#[derive(Default, Clone)]
pub(crate) struct Watchdogs(Arc<Mutex<HashMap<u64, AbortHandle>>>);

impl Watchdogs {
    /// Starts the task that keeps `owner`'s lock on `nodes` alive (every ttl/3, needing
    /// `quorum` renewals), or, without renewal, fires `lost` when `valid_for` ends.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &self,
        nodes: Vec<Arc<Node>>,
        quorum: usize,
        keys: Keys,
        owner: String,
        ttl: Duration,
        valid_for: Duration,
        renew: bool,
        lost: LostTrigger,
    ) -> u64 {
        let id = NEXT_WAITER.fetch_add(1, Ordering::Relaxed);
        let map = self.0.clone();
        let task = tokio::spawn(async move {
            if !renew {
                tokio::time::sleep(valid_for).await;
                lost.fire();
                return;
            }
            let mut valid_until = Instant::now() + valid_for;
            loop {
                tokio::time::sleep(ttl / 3).await;
                let started = Instant::now();
                let limit = ttl / 3;
                let answers = futures::future::join_all(
                    nodes.iter().map(|n| n.renew(&keys, &owner, ttl, limit)),
                )
                .await;
                let renewed = answers.iter().filter(|a| matches!(a, Ok(true))).count();
                let refused = answers.iter().filter(|a| matches!(a, Ok(false))).count();
                if renewed >= quorum {
                    valid_until = started + ttl;
                } else if refused > nodes.len() - quorum || Instant::now() >= valid_until {
                    // Not ours on a majority any more, or not renewed within the TTL.
                    lost.fire();
                    break;
                }
            }
            map.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        });
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, task.abort_handle());
        id
    }

    /// Stops one watchdog (on release).
    pub fn stop(&self, id: u64) {
        if let Some(h) = self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) {
            h.abort();
        }
    }

    /// Stops them all (on crash).
    pub fn stop_all(&self) {
        for (_, h) in self.0.lock().unwrap_or_else(|p| p.into_inner()).drain() {
            h.abort();
        }
    }
}

/// How long a queue entry lives without a refresh. A waiter refreshes it on every poll (at least
/// every `fallback_poll`), so only a dead or departed waiter's entry expires.
pub(crate) fn entry_ttl(cfg: &super::RecipeConfig) -> Duration {
    cfg.fallback_poll * 3 + cfg.request_timeout * 2
}

/// What a Redis lease keeps for release.
pub(crate) struct RedisHandle {
    pub keys: Keys,
    pub owner: String,
    pub watchdog: u64,
}
