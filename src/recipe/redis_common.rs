//! What both Redis recipes share around the servers: owner identities, waiting for
//! notifications, the renewal watchdog, and the lease handle.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::AbortHandle;

use super::LostTrigger;
use super::redis::Master;
use super::redis_node::Node;
use super::redis_scripts::Keys;

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

    /// Waits up to `at_most` for a notification; false when none came. Each distinct message
    /// is one wake-up: the same release heard from several Redlock masters carries the same
    /// payload and wakes once.
    pub async fn wait(&mut self, at_most: Duration) -> bool {
        let first = match tokio::time::timeout(at_most, self.rx.recv()).await {
            Ok(Some(m)) => m,
            // Timed out (the fallback poll) or every sender gone: the caller tries again.
            _ => return false,
        };
        if self.seen.insert(first) {
            self.wakeups += 1;
        }
        while let Ok(m) = self.rx.try_recv() {
            if self.seen.insert(m) {
                self.wakeups += 1;
            }
        }
        true
    }

    /// Waits for a notification, for the holder's remaining TTL (`ttl_left`, after which the
    /// lock is free without a release message), or for the fallback poll, whichever is first;
    /// counts a wait that ended on the fallback poll alone.
    pub async fn wait_or_poll(
        &mut self,
        fallback_poll: Duration,
        ttl_left: Option<Duration>,
        left: Duration,
        tally: &super::Tally,
    ) {
        let until_free = ttl_left.map(|t| t + Duration::from_millis(1));
        let wait = until_free.map_or(fallback_poll, |t| t.min(fallback_poll));
        if !self.wait(wait.min(left)).await && wait == fallback_poll && wait <= left {
            tally.fallback_poll();
        }
    }
}

/// Where a watchdog renews: fixed servers (Redlock), or whichever server is the master now.
pub(crate) enum NodeSource {
    Fixed(Vec<Arc<Node>>),
    Master(Arc<Master>),
}

impl NodeSource {
    async fn nodes(&self) -> Vec<Arc<Node>> {
        match self {
            NodeSource::Fixed(v) => v.clone(),
            NodeSource::Master(m) => vec![m.current().await],
        }
    }

    /// A renewal could not reach the master: it may have moved (Sentinel failover).
    async fn unreachable(&self, nodes: &[Arc<Node>], deadline: Instant) {
        if let (NodeSource::Master(m), [node]) = (self, nodes) {
            m.reresolve(node, deadline).await;
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
        source: NodeSource,
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
                let nodes = source.nodes().await;
                let answers = futures::future::join_all(
                    nodes.iter().map(|n| n.renew(&keys, &owner, ttl, limit)),
                )
                .await;
                let renewed = answers.iter().filter(|a| matches!(a, Ok(true))).count();
                let refused = answers.iter().filter(|a| matches!(a, Ok(false))).count();
                if answers
                    .iter()
                    .any(|a| matches!(a, Err(e) if e.is_indeterminate()))
                {
                    source.unreachable(&nodes, started + limit).await;
                }
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
