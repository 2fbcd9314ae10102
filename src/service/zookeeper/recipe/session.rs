//! One ZooKeeper session of the lock recipe, and the node operations that must stay safe when
//! answers get lost: deleting only our own nodes, finding our leftovers by the session tag.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zookeeper_client as zk;

use crate::recipe::deadline::Budget;
use crate::recipe::holders::Holders;
use crate::recipe::{LockError, RecipeConfig};
use crate::sync::LockUnpoisoned;

/// Queue nodes are named `<session tag>lock-<sequence>`.
pub(super) const SEQ_PREFIX: &str = "lock-";

/// One session, the leases it holds, and the task that watches its state.
pub(super) struct ZkSession {
    pub(super) client: zk::Client,
    pub(super) holders: Arc<Holders>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ZkSession {
    fn drop(&mut self) {
        // The state watcher never ends on its own once every client is gone.
        self.task.abort();
    }
}

/// Runs an idempotent request, again (with the budget's backoff) while the client reconnects
/// after a `ConnectionLoss` (a server restarted, the session moved, no quorum), within
/// `budget`.
pub(super) async fn idempotent<T, F, Fut>(
    budget: &Budget,
    what: &str,
    request: F,
) -> Result<Result<T, zk::Error>, LockError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk::Error>>,
{
    let mut backoff = budget.backoff();
    loop {
        match budget.run(what, request()).await? {
            Err(zk::Error::ConnectionLoss) => {
                if !backoff.wait(budget.deadline()).await {
                    return Ok(Err(zk::Error::ConnectionLoss));
                }
            }
            other => return Ok(other),
        }
    }
}

/// Maps a ZooKeeper client error to the lock error a caller can act on.
pub(super) fn zk_err(what: &str, e: zk::Error) -> LockError {
    match e {
        zk::Error::SessionExpired | zk::Error::ClientClosed | zk::Error::AuthFailed => {
            LockError::Lost {
                key: what.to_string(),
                why: format!("ZooKeeper session is gone ({e}); the next acquire opens a new one"),
            }
        }
        // A moved session (another server took it over) is Curator's retryable SESSIONMOVED.
        zk::Error::ConnectionLoss
        | zk::Error::Timeout
        | zk::Error::Custom(_)
        | zk::Error::SessionMoved => LockError::Connection(format!("{what}: {e}")),
        other => LockError::Server(format!("{what}: {other}")),
    }
}

/// Fires every held lease's signal when the session ends, or when the connection stays down
/// for a third of the session timeout. The client notices a silent server after 2/5 of the
/// session timeout, so by then up to 11/15 of it may have passed since the server last heard
/// from us; a follower cut off from the leader drops us after `syncLimit × tickTime`. Under
/// the session-timeout rule of the recipe's module doc, either way the holder is told before
/// the leader can expire the session and grant the lock elsewhere, while a quick reconnect
/// (one node restarted, the session moved to another) tells nobody.
async fn watch_session(mut states: zk::StateWatcher, holders: Arc<Holders>, grace: Duration) {
    let mut state = states.changed().await;
    loop {
        state = match state {
            zk::SessionState::Expired | zk::SessionState::Closed | zk::SessionState::AuthFailed => {
                holders.lose_all(&format!("ZooKeeper session {state:?}"));
                return;
            }
            zk::SessionState::Disconnected => {
                match tokio::time::timeout(grace, states.changed()).await {
                    Ok(next) => next,
                    Err(_) => {
                        holders.lose_held();
                        states.changed().await
                    }
                }
            }
            _ => states.changed().await,
        };
    }
}

/// True when a create that failed this way may still have happened on the server.
pub(super) fn maybe_applied(e: &LockError) -> bool {
    matches!(e, LockError::Connection(_) | LockError::Timeout { .. })
}

/// The name prefix of this session's queue nodes.
pub(super) fn session_tag(s: &ZkSession) -> String {
    owner_tag(s.client.session_id().0)
}

/// The name prefix of the queue nodes of session `owner`.
pub(super) fn owner_tag(owner: i64) -> String {
    format!("{:x}-", owner as u64)
}

/// The sequence number of a queue node name (`<tag>lock-NNNNNNNNNN`).
pub(super) fn sequence(name: &str) -> Option<i64> {
    name.rsplit_once(SEQ_PREFIX)?.1.parse().ok()
}

/// Which of our session's nodes a clean-up may remove, told apart by the attempt id every lock
/// node carries as its data: the session alone does not say which attempt made a node, and a
/// client may hold one key while acquiring another.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mine {
    /// Only the node of this attempt (a take-back, a release).
    Attempt(u64),
    /// A leftover: a node of our session made by an earlier attempt on this key, never one
    /// made by `current` nor by any attempt in `live` (locks this client holds).
    Leftover { current: u64 },
    /// Any node of the session: one this client gave up on (it ended here, or its client was
    /// replaced), whose locks it no longer acts on.
    Any,
}

/// The data of a lock node made by `attempt`.
pub(super) fn attempt_data(attempt: u64) -> Vec<u8> {
    format!("{attempt:016x}").into_bytes()
}

/// The attempt id a lock node's data names, if it names one.
pub(super) fn attempt_of(data: &[u8]) -> Option<u64> {
    u64::from_str_radix(std::str::from_utf8(data).ok()?, 16).ok()
}

/// Whether attempt `id` holds a lock of this client now.
pub(super) fn is_live(live: &Mutex<HashSet<u64>>, id: u64) -> bool {
    live.locked().contains(&id)
}

/// Deletes this session's queue nodes in `dir` that `which` allows.
pub(super) async fn sweep_own(
    s: &ZkSession,
    dir: &str,
    which: Mine,
    live: &Mutex<HashSet<u64>>,
    budget: &Budget,
) -> Result<u64, LockError> {
    let owner = s.client.session_id().0;
    sweep_owned(&s.client, owner, dir, None, which, live, budget).await
}

/// Deletes the nodes of session `owner` in `dir` that `which` allows (its queue nodes, found
/// by their tag, and the child named `also` when it is there and `owner`'s: the herd's lock
/// node), asking through `client`, which may be another session's. Returns the requests it
/// sent, counted as the acquisitions count them (a retry within `budget` is not).
pub(super) async fn sweep_owned(
    client: &zk::Client,
    owner: i64,
    dir: &str,
    also: Option<&str>,
    which: Mine,
    live: &Mutex<HashSet<u64>>,
    budget: &Budget,
) -> Result<u64, LockError> {
    let children = match idempotent(budget, "getChildren", || client.list_children(dir)).await? {
        Ok(c) => c,
        Err(zk::Error::NoNode) => return Ok(1),
        Err(e) => return Err(zk_err(dir, e)),
    };
    let tag = owner_tag(owner);
    let mut sent = 1;
    for c in &children {
        let queued = c.starts_with(&tag) && sequence(c).is_some();
        if queued || Some(c.as_str()) == also {
            // getData, and a delete when the node was to go.
            let deleted =
                delete_owned(client, owner, &format!("{dir}/{c}"), which, live, budget).await?;
            sent += 1 + u64::from(deleted);
        }
    }
    Ok(sent)
}

/// Deletes `path` if it is our session's node and `which` allows it (read data and stat, then
/// delete that version, so the node deleted is the one whose data was checked): `Ok(true)`
/// removed, `Ok(false)` gone or not to be touched. `live` holds the attempt ids of the locks this
/// client holds now. Retries while the client reconnects, within `budget`.
pub(super) async fn delete_own(
    s: &ZkSession,
    path: &str,
    which: Mine,
    live: &Mutex<HashSet<u64>>,
    budget: &Budget,
) -> Result<bool, LockError> {
    delete_owned(
        &s.client,
        s.client.session_id().0,
        path,
        which,
        live,
        budget,
    )
    .await
}

/// [`delete_own`] for a node of session `owner`, asking through `client` (which may be
/// another session's: ZooKeeper lets any session delete a node, and the version guard keeps
/// it to the node whose owner and data were checked).
pub(super) async fn delete_owned(
    client: &zk::Client,
    owner: i64,
    path: &str,
    which: Mine,
    live: &Mutex<HashSet<u64>>,
    budget: &Budget,
) -> Result<bool, LockError> {
    let attempt = || async {
        let (data, stat) = match budget.run("getData", client.get_data(path)).await? {
            Ok(r) => r,
            Err(zk::Error::NoNode) => return Ok(false),
            Err(e) => return Err(zk_err(path, e)),
        };
        if stat.ephemeral_owner != owner {
            return Ok(false);
        }
        let made_by = attempt_of(&data);
        let allowed = match which {
            Mine::Attempt(a) => made_by == Some(a),
            Mine::Leftover { current } => {
                made_by != Some(current) && !made_by.is_some_and(|m| is_live(live, m))
            }
            Mine::Any => true,
        };
        if !allowed {
            return Ok(false);
        }
        match budget
            .run("delete", client.delete(path, Some(stat.version)))
            .await?
        {
            Ok(()) => Ok(true),
            Err(zk::Error::NoNode | zk::Error::BadVersion) => Ok(false),
            Err(e) => Err(zk_err(path, e)),
        }
    };
    let mut backoff = budget.backoff();
    loop {
        match attempt().await {
            Err(e) if e.is_indeterminate() && backoff.wait(budget.deadline()).await => {}
            other => return other,
        }
    }
}

/// Opens a detached session and starts watching its state.
pub(super) async fn open_session(
    connect_string: &str,
    config: &RecipeConfig,
) -> Result<ZkSession, LockError> {
    let limit = config.request_timeout * 3;
    let mut connector = zk::Client::connector();
    connector = connector
        .with_session_timeout(config.ttl)
        // Detached: dropping the client must not close the session, so that `crash` leaves
        // ephemeral nodes to expire with the session, as a killed process would.
        .with_detached();
    if let Some(c) = &config.credentials {
        connector = connector.with_auth("digest", &c.zookeeper_digest());
    }
    let connecting = connector.connect(connect_string);
    let client = match tokio::time::timeout(limit, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return Err(LockError::Connection(format!(
                "connect to ZooKeeper at {connect_string}: {e}; check the endpoints and that a \
                 quorum is up"
            )));
        }
        Err(_) => {
            return Err(LockError::Connection(format!(
                "no ZooKeeper session from {connect_string} within {limit:?}: check the \
                 endpoints and that a quorum is up, or raise request_timeout"
            )));
        }
    };
    let holders = Arc::new(Holders::default());
    let grace = client.session_timeout() / 3;
    let task = tokio::spawn(watch_session(
        client.state_watcher(),
        holders.clone(),
        grace,
    ));
    Ok(ZkSession {
        client,
        holders,
        task,
    })
}
