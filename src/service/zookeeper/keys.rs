//! The nodes lockbench's ZooKeeper recipe wrote under a target's prefix: listed before a run (to
//! refuse a prefix node that already has children) and removed after it, children first.

use std::future::Future;
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::cluster::ConnectInfo;
use crate::recipe::retry::{RetryPolicy, retrying};
use crate::recipe::{Credentials, LockError};
use crate::service::{KEYS_RETRY_FOR, TargetOps, tries_note};

/// ZooKeeper's [`TargetOps`]: `srvr` needs no login.
pub(super) const OPS: TargetOps = TargetOps {
    list: |info, login, prefix, limit| Box::pin(list_nodes(info, login, prefix, limit)),
    remove: |info, login, prefix| Box::pin(remove_tree(info, login, prefix)),
    version: None,
    leads: Some(|endpoint, _| Box::pin(leads(endpoint))),
};

/// Whether the server at `endpoint` says `Mode: leader` (or `standalone`) to `srvr`.
async fn leads(endpoint: &str) -> Result<bool, String> {
    let reply = super::provider::four_letter_word(endpoint, "srvr").await?;
    Ok(matches!(
        super::provider::parse_mode(&reply).as_deref(),
        Some("leader" | "standalone")
    ))
}

/// How long one request may take.
const REQUEST: Duration = Duration::from_secs(5);

/// What the retries of a listing or removal ride out, each try on a new session: a lost
/// connection, a request timed out, no session within its connect time.
const RETRIED: &str = "an election's or a lost session's errors";

/// A ZooKeeper error as a lock error: what a new try on a new session may get past (a lost
/// connection or session, a timeout, a session another server took over) is retryable; the
/// rest (no access, a bad path) is not.
fn keys_err(what: &str, e: zk::Error) -> LockError {
    match e {
        zk::Error::ConnectionLoss
        | zk::Error::Timeout
        | zk::Error::SessionExpired
        | zk::Error::SessionMoved
        | zk::Error::ClientClosed
        | zk::Error::Custom(_) => LockError::Connection(format!("{what}: {e}")),
        _ => LockError::Server(format!("{what}: {e}")),
    }
}

/// Runs `op` on a new session each try, asked again through retryable errors until
/// [`KEYS_RETRY_FOR`] has passed. `op` must be safe to repeat.
async fn with_retries<T, F, Fut>(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    op: F,
) -> (Result<T, LockError>, u32)
where
    F: Fn(zk::Client) -> Fut,
    Fut: Future<Output = Result<T, LockError>>,
{
    let op = &op;
    retrying(
        RetryPolicy::default(),
        Instant::now() + KEYS_RETRY_FOR,
        || async move { op(client(info, login).await?).await },
    )
    .await
}

async fn client(info: &ConnectInfo, login: Option<&Credentials>) -> Result<zk::Client, LockError> {
    let mut connector = zk::Client::connector();
    if let Some(c) = login {
        connector = connector.with_auth("digest", &c.zookeeper_digest());
    }
    let connect_string = info.endpoints.join(",");
    match tokio::time::timeout(REQUEST * 3, connector.connect(&connect_string)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(keys_err(
            &format!("connect to ZooKeeper at {connect_string}"),
            e,
        )),
        Err(_) => Err(LockError::Connection(format!(
            "no ZooKeeper session at {connect_string} within {:?}",
            REQUEST * 3
        ))),
    }
}

/// The children of `path`; none when it does not exist.
async fn children(c: &zk::Client, path: &str) -> Result<Vec<String>, LockError> {
    match tokio::time::timeout(REQUEST, c.list_children(path)).await {
        Ok(Ok(mut v)) => {
            v.sort();
            Ok(v)
        }
        Ok(Err(zk::Error::NoNode)) => Ok(Vec::new()),
        Ok(Err(e)) => Err(keys_err(&format!("list the children of {path}"), e)),
        Err(_) => Err(LockError::Connection(format!(
            "listing the children of {path} took over {REQUEST:?}"
        ))),
    }
}

/// Up to `limit` nodes under `prefix` (depth first).
async fn list_nodes(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
    limit: usize,
) -> Result<Vec<String>, String> {
    // Reads: asking again changes nothing.
    let (r, tries) = with_retries(info, login, |c| async move {
        let (mut found, mut todo) = (Vec::new(), vec![prefix.to_string()]);
        while let Some(path) = todo.pop() {
            for child in children(&c, &path).await? {
                let full = format!("{path}/{child}");
                found.push(full.clone());
                if found.len() >= limit {
                    return Ok(found);
                }
                todo.push(full);
            }
        }
        Ok(found)
    })
    .await;
    r.map_err(|e| {
        format!(
            "list the nodes under {prefix}: {e}{}",
            tries_note(tries, RETRIED)
        )
    })
}

/// Deletes `prefix` and every node under it, children first: how many nodes went. Deleting
/// again deletes nothing more; the count is the last try's, so a try that failed after some of
/// its deletions leaves those out of it.
async fn remove_tree(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
) -> Result<u64, String> {
    let (r, tries) = with_retries(info, login, |c| async move {
        // Every node, parents before children; deleting in reverse removes children first.
        let (mut order, mut todo) = (vec![prefix.to_string()], vec![prefix.to_string()]);
        while let Some(path) = todo.pop() {
            for child in children(&c, &path).await? {
                let full = format!("{path}/{child}");
                order.push(full.clone());
                todo.push(full);
            }
        }
        let mut removed = 0;
        for path in order.iter().rev() {
            match tokio::time::timeout(REQUEST, c.delete(path, None)).await {
                Ok(Ok(())) => removed += 1,
                // Gone already: an ephemeral node whose session closed meanwhile, or a try
                // before this one deleted it.
                Ok(Err(zk::Error::NoNode)) => {}
                Ok(Err(e)) => return Err(keys_err(&format!("delete {path}"), e)),
                Err(_) => {
                    return Err(LockError::Connection(format!(
                        "deleting {path} took over {REQUEST:?}"
                    )));
                }
            }
        }
        Ok(removed)
    })
    .await;
    r.map_err(|e| {
        format!(
            "delete the nodes under {prefix}: {e}{}",
            tries_note(tries, RETRIED)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_new_session_may_get_past_is_retried_and_the_rest_is_not() {
        for e in [
            zk::Error::ConnectionLoss,
            zk::Error::Timeout,
            zk::Error::SessionExpired,
            zk::Error::SessionMoved,
            zk::Error::ClientClosed,
        ] {
            assert!(keys_err("list", e.clone()).is_retryable(), "{e}");
        }
        for e in [
            zk::Error::NoAuth,
            zk::Error::AuthFailed,
            zk::Error::BadArguments(&"bad path"),
        ] {
            assert!(!keys_err("list", e.clone()).is_retryable(), "{e}");
        }
    }
}
