//! One Redis server as the lock recipes see it: a self-reconnecting command connection, one
//! pub/sub connection whose messages are routed to the waiters that asked for them, and the
//! script calls with their deadlines.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubSink};
use ::redis::{RedisError, Script};
use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

use super::LockError;
use super::redis_scripts::{
    FAIR_ACQUIRE_SCRIPT, HERD_ACQUIRE_SCRIPT, Keys, RELEASE_SCRIPT, RENEW_SCRIPT, TicketMode,
};

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
            // -2: the key vanished meanwhile, try again at once; -1: a key without TTL (not
            // ours), only a release or the fallback poll can help.
            retry_within: match pttl {
                -1 => None,
                p => Some(Duration::from_millis(p.max(0) as u64)),
            },
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

    /// Compare-and-delete plus queue exit; true if this call deleted `owner`'s lock. `wake` is
    /// the message for the waiters this may let in (see [`wake_message`]); `None` is silent.
    ///
    /// [`wake_message`]: super::redis_common::wake_message
    #[allow(clippy::too_many_arguments)]
    pub async fn release(
        &self,
        keys: &Keys,
        owner: &str,
        token: u64,
        wake: Option<&str>,
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
                    wake.unwrap_or_default().to_string(),
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
        limit: Duration,
    ) -> Result<(), LockError> {
        let limit = limit.min(self.request_timeout);
        let mut st = self.pubsub.lock().await;
        if st.sink.is_none() || !st.alive.load(Ordering::SeqCst) {
            self.reconnect_pubsub(&mut st, limit).await?;
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
            let r = match tokio::time::timeout(limit, sink.subscribe(channel)).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(lock_error(&self.endpoint, e)),
                Err(_) => Err(self.timed_out(limit)),
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

    async fn reconnect_pubsub(
        &self,
        st: &mut PubSubState,
        limit: Duration,
    ) -> Result<(), LockError> {
        if let Some(t) = st.task.take() {
            t.abort();
        }
        let pubsub = tokio::time::timeout(limit, self.client.get_async_pubsub())
            .await
            .map_err(|_| self.timed_out(limit))?
            .map_err(|e| lock_error(&self.endpoint, e))?;
        let (mut sink, mut stream) = pubsub.split();
        for channel in st.counts.keys() {
            tokio::time::timeout(limit, sink.subscribe(channel))
                .await
                .map_err(|_| self.timed_out(limit))?
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
