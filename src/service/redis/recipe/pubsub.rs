//! The pub/sub side of one Redis server: one connection whose messages are routed to the waiters
//! that asked for them, subscriptions reference-counted per channel, and a connection that comes
//! back by itself when it dies while waiters listen.
//!
//! A pub/sub connection can die without the server going away (`CLIENT KILL TYPE pubsub`, an
//! output-buffer limit, a proxy's idle timeout). Its waiters would then hear nothing more and
//! fall back to the poll, so the reader task that sees the end reconnects, subscribes every
//! routed channel again and has every waiter look again (a message published meanwhile was lost).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use ::redis::aio::PubSubSink;
use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

use crate::recipe::LockError;
use crate::service::redis::recipe::server::lock_error;
use crate::sync::LockUnpoisoned;

type Routes = Arc<Mutex<HashMap<String, Vec<(u64, UnboundedSender<Vec<u8>>)>>>>;

/// What a waiter receives when its messages may have been lost: not a notification, a prompt to
/// check (see `Waiter::wait`). Published messages are never empty.
pub(crate) const LOOK_AGAIN: Vec<u8> = Vec::new();

/// Connection state, under one async lock so a SUBSCRIBE can never overtake the UNSUBSCRIBE of
/// the same channel, nor a reconnect a subscription.
#[derive(Default)]
struct State {
    sink: Option<PubSubSink>,
    alive: Arc<AtomicBool>,
    task: Option<AbortHandle>,
    counts: HashMap<String, usize>,
    /// Bumped by every (re)connect, so a stale recovery knows someone else already reconnected.
    generation: u64,
    /// Shut down on purpose: do not reconnect until the next subscription.
    closed: bool,
}

impl Drop for State {
    fn drop(&mut self) {
        // Dropping the sink does not end the connection; the reader task holds it open.
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// One server's pub/sub connection and its routes.
pub(crate) struct PubSub {
    endpoint: String,
    client: ::redis::Client,
    request_timeout: Duration,
    routes: Routes,
    state: tokio::sync::Mutex<State>,
}

impl PubSub {
    pub fn new(endpoint: &str, client: ::redis::Client, request_timeout: Duration) -> Arc<PubSub> {
        Arc::new(PubSub {
            endpoint: endpoint.to_string(),
            client,
            request_timeout,
            routes: Routes::default(),
            state: tokio::sync::Mutex::default(),
        })
    }

    fn timed_out(&self, limit: Duration) -> LockError {
        LockError::Connection(format!(
            "{}: no pub/sub answer within {limit:?} (raise request_timeout if the server is just slow)",
            self.endpoint
        ))
    }

    /// Routes messages on `channel` to `tx` (tagged `id`) until [`PubSub::unsubscribe`],
    /// connecting first if there is no live connection.
    pub async fn subscribe(
        self: &Arc<Self>,
        channel: &str,
        id: u64,
        tx: UnboundedSender<Vec<u8>>,
        limit: Duration,
    ) -> Result<(), LockError> {
        let limit = limit.min(self.request_timeout);
        let mut st = self.state.lock().await;
        if st.sink.is_none() || !st.alive.load(Ordering::SeqCst) {
            self.connect(&mut st, limit).await?;
        }
        self.routes
            .locked()
            .entry(channel.to_string())
            .or_default()
            .push((id, tx));
        let count = st.counts.entry(channel.to_string()).or_default();
        *count += 1;
        if *count > 1 {
            return Ok(());
        }
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
            self.routes.locked().remove(channel);
        }
        r
    }

    /// Stops routing `channel` to waiter `id`; unsubscribes when nobody else listens.
    pub async fn unsubscribe(&self, channel: &str, id: u64) {
        let mut st = self.state.lock().await;
        if let Some(v) = self.routes.locked().get_mut(channel) {
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
        self.routes.locked().remove(channel);
        if let Some(mut sink) = st.sink.clone() {
            // A failed UNSUBSCRIBE only costs stray messages nobody is routed to.
            let _ = tokio::time::timeout(self.request_timeout, sink.unsubscribe(channel)).await;
        }
    }

    /// Drops the connection; a later subscription opens a new one.
    pub async fn shutdown(&self) {
        let mut st = self.state.lock().await;
        if let Some(t) = st.task.take() {
            t.abort();
        }
        st.sink = None;
        st.closed = true;
    }

    /// Opens a connection, subscribes every channel that has waiters (one SUBSCRIBE), starts its
    /// reader, and prompts the waiters of those channels to look again. All within `limit`.
    async fn connect(self: &Arc<Self>, st: &mut State, limit: Duration) -> Result<(), LockError> {
        if let Some(t) = st.task.take() {
            t.abort();
        }
        st.sink = None;
        let pubsub = tokio::time::timeout(limit, self.client.get_async_pubsub())
            .await
            .map_err(|_| self.timed_out(limit))?
            .map_err(|e| lock_error(&self.endpoint, e))?;
        let (mut sink, mut stream) = pubsub.split();
        let channels: Vec<&String> = st.counts.keys().collect();
        if !channels.is_empty() {
            tokio::time::timeout(limit, sink.subscribe(channels))
                .await
                .map_err(|_| self.timed_out(limit))?
                .map_err(|e| lock_error(&self.endpoint, e))?;
        }
        st.generation += 1;
        st.closed = false;
        let generation = st.generation;
        let alive = Arc::new(AtomicBool::new(true));
        let (routes, flag, this) = (self.routes.clone(), alive.clone(), Arc::downgrade(self));
        let task = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                let routes = routes.locked();
                if let Some(v) = routes.get(msg.get_channel_name()) {
                    for (_, tx) in v {
                        let _ = tx.send(msg.get_payload_bytes().to_vec());
                    }
                }
            }
            flag.store(false, Ordering::SeqCst);
            spawn_recover(this, generation);
        });
        st.sink = Some(sink);
        st.alive = alive;
        st.task = Some(task.abort_handle());
        self.look_again(st);
        Ok(())
    }

    /// Prompts every waiter of the channels `st` carries to check the lock.
    fn look_again(&self, st: &State) {
        let routes = self.routes.locked();
        for channel in st.counts.keys() {
            for (_, tx) in routes.get(channel).into_iter().flatten() {
                let _ = tx.send(LOOK_AGAIN);
            }
        }
    }
}

/// Apart from the reader task: reconnecting aborts the connection's reader, which is that task.
fn spawn_recover(this: Weak<PubSub>, generation: u64) {
    tokio::spawn(recover(this, generation));
}

/// After the connection of `generation` ended: reconnects while waiters listen, backing off
/// from 50 ms to 1 s between attempts (each within the request timeout); stops when the node is
/// gone, shut down, left without waiters, or reconnected by someone else (a new subscription).
async fn recover(this: Weak<PubSub>, generation: u64) {
    let mut pause = Duration::from_millis(50);
    loop {
        let Some(ps) = this.upgrade() else { return };
        {
            let mut st = ps.state.lock().await;
            if st.closed || st.generation != generation {
                return;
            }
            if st.counts.is_empty() {
                st.sink = None; // the next subscription connects
                return;
            }
            if ps.connect(&mut st, ps.request_timeout).await.is_ok() {
                return;
            }
        }
        drop(ps);
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}
