//! One client's PostgreSQL session: a `tokio-postgres` connection to the server that takes
//! writes, its backend pid (what `pg_locks` names it by), and the notifications (`LISTEN`) its
//! connection delivers. The connection is driven by a task of its own, which forwards every
//! notification's channel name to the waiters and marks the session broken when the connection
//! ends. Advisory locks are session-bound: when this session ends, the server releases every
//! lock it held.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch};
use tokio_postgres::{AsyncMessage, NoTls, SimpleQueryMessage};

use super::provider::{config_for, describe};

/// How many notifications may wait for a slow waiter before it counts them as lagged.
const NOTIFICATION_BUFFER: usize = 1024;
/// The schema every client needs, made once per connection (idempotent, serialised by a
/// transaction-scoped advisory lock so concurrent first connections do not race on the catalog).
pub(crate) const SCHEMA_SQL: &str = "SET client_min_messages = warning; \
BEGIN; SELECT pg_advisory_xact_lock(-7395528165741112001); \
CREATE SEQUENCE IF NOT EXISTS lockbench_fence; \
CREATE TABLE IF NOT EXISTS lockbench_queue (k bigint NOT NULL, ticket bigserial PRIMARY KEY, \
pid int NOT NULL, started timestamptz NOT NULL); \
CREATE INDEX IF NOT EXISTS lockbench_queue_k ON lockbench_queue (k, ticket); \
COMMIT";

/// An open session on the primary.
pub(crate) struct Session {
    /// The client half of the connection.
    pub(crate) client: tokio_postgres::Client,
    /// The server process serving this session (`pg_backend_pid()`).
    pub(crate) pid: i32,
    /// This recipe's number for the session: a lease taken on another session is stale.
    pub(crate) serial: u64,
    /// The endpoint it is connected to.
    pub(crate) endpoint: String,
    notes: broadcast::Sender<String>,
    broken: watch::Receiver<bool>,
    driver: tokio::task::JoinHandle<()>,
}

impl Session {
    /// Connects to `endpoint` by `deadline` and checks that it takes writes (not in recovery);
    /// `Err` says why not. Makes the schema there.
    pub(crate) async fn open(
        endpoint: &str,
        serial: u64,
        request_timeout: Duration,
        deadline: Instant,
    ) -> Result<Session, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        let limit = left.max(Duration::from_millis(1)).min(request_timeout * 2);
        let mut cfg = config_for(endpoint, limit);
        // A dead peer is noticed by the kernel within ~11 s even with nothing to send.
        cfg.keepalives(true)
            .keepalives_idle(Duration::from_secs(5))
            .keepalives_interval(Duration::from_secs(2))
            .keepalives_retries(3);
        let (client, mut connection) = tokio::time::timeout(limit, cfg.connect(NoTls))
            .await
            .map_err(|_| format!("{endpoint}: no connection within {limit:?}"))?
            .map_err(|e| format!("{endpoint}: {}", describe(&e)))?;
        let (notes, _) = broadcast::channel(NOTIFICATION_BUFFER);
        let (broken_tx, broken) = watch::channel(false);
        let forward = notes.clone();
        let driver = tokio::spawn(async move {
            loop {
                match futures::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notification(n))) => {
                        let _ = forward.send(n.channel().to_string());
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                }
            }
            broken_tx.send_replace(true);
        });
        let mut session = Session {
            client,
            pid: 0,
            serial,
            endpoint: endpoint.to_string(),
            notes,
            broken,
            driver,
        };
        let rows = session
            .simple("SELECT pg_backend_pid(), pg_is_in_recovery()", limit, 2)
            .await?;
        match rows.as_slice() {
            [row] if row[1] == "f" => {
                session.pid = row[0]
                    .parse()
                    .map_err(|_| format!("{endpoint}: pg_backend_pid() answered {:?}", row[0]))?;
            }
            [row] if row[1] == "t" => {
                return Err(format!("{endpoint} is a replica (in recovery)"));
            }
            _ => return Err(format!("{endpoint}: unexpected answer {rows:?}")),
        }
        session.simple(SCHEMA_SQL, limit, 0).await?;
        Ok(session)
    }

    /// Runs `sql` (simple protocol) within `limit`: every row's first `columns` values.
    pub(crate) async fn simple(
        &self,
        sql: &str,
        limit: Duration,
        columns: usize,
    ) -> Result<Vec<Vec<String>>, String> {
        let msgs = tokio::time::timeout(limit, self.client.simple_query(sql))
            .await
            .map_err(|_| format!("{}: no answer within {limit:?}", self.endpoint))?
            .map_err(|e| format!("{}: {}", self.endpoint, describe(&e)))?;
        Ok(msgs
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(
                    (0..columns)
                        .map(|i| r.get(i).unwrap_or_default().to_string())
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    }

    /// The notifications from now on (channel names).
    pub(crate) fn notifications(&self) -> broadcast::Receiver<String> {
        self.notes.subscribe()
    }

    /// Whether the connection has ended.
    pub(crate) fn is_broken(&self) -> bool {
        *self.broken.borrow() || self.client.is_closed()
    }

    /// Resolves when the connection ends.
    pub(crate) async fn wait_broken(&self) {
        let mut rx = self.broken.clone();
        // An error means the driver is gone (aborted): the connection has ended too.
        let _ = rx.wait_for(|b| *b).await;
    }

    /// Drops the connection at once, unlocking nothing (the server ends the session, and its
    /// locks, when it notices).
    pub(crate) fn close(&self) {
        self.driver.abort();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// A shared session.
pub(crate) type Shared = Arc<Session>;
