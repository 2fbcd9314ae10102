//! What lockbench's etcd recipes wrote under a target's prefix: listed before a run (to refuse a
//! prefix that holds someone else's keys) and removed after it. Every key the recipes write is
//! `<prefix>/...` (see `recipe/`), so a range over `<prefix>/` is exactly theirs.

use std::time::Instant;

use etcd_client::{Client, ConnectOptions, DeleteOptions, GetOptions};

use crate::cluster::{ConnectInfo, PROBE_TIMEOUT};
use crate::recipe::Credentials;
use crate::recipe::retry::{RetryPolicy, retrying};
use crate::service::etcd::recipe::etcd_err;
use crate::service::{KEYS_RETRY_FOR, TargetOps, tries_note};

/// What the retries of a listing or removal ride out.
const RETRIED: &str = "an election's errors";

/// etcd's [`TargetOps`]: its status call needs no login.
pub(super) const OPS: TargetOps = TargetOps {
    list: |info, login, prefix, limit| Box::pin(list(info, login, prefix, limit)),
    remove: |info, login, prefix| Box::pin(remove(info, login, prefix)),
    version: None,
    leads: Some(|endpoint, _| Box::pin(leads(endpoint))),
};

/// Whether the member at `endpoint` is the leader it reports (its status call needs no login).
async fn leads(endpoint: &str) -> Result<bool, String> {
    let mut c = super::provider::client_for(endpoint).await?;
    let st = tokio::time::timeout(PROBE_TIMEOUT, c.status())
        .await
        .map_err(|_| format!("status of {endpoint} took over {PROBE_TIMEOUT:?}"))?
        .map_err(|e| e.to_string())?;
    let member = st.header().map(|h| h.member_id()).unwrap_or(0);
    Ok(member != 0 && member == st.leader())
}

/// A client of the cluster `info` describes, logged in with `login`, each request with a deadline.
pub(super) async fn client(
    info: &ConnectInfo,
    login: Option<&Credentials>,
) -> Result<Client, String> {
    let (urls, opts) = crate::service::etcd::recipe::with_access(
        &info.endpoints,
        ConnectOptions::new()
            .with_connect_timeout(PROBE_TIMEOUT)
            .with_timeout(PROBE_TIMEOUT * 5),
        login,
    );
    Client::connect(&urls, Some(opts))
        .await
        .map_err(|e| format!("connect to etcd at {}: {e}", urls.join(",")))
}

/// Up to `limit` keys under `prefix/`.
async fn list(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
    limit: usize,
) -> Result<Vec<String>, String> {
    let c = client(info, login).await?;
    let opts = GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_limit(limit as i64);
    // A read: asking again changes nothing.
    let (r, tries) = retrying(
        RetryPolicy::default(),
        Instant::now() + KEYS_RETRY_FOR,
        || {
            let (mut c, opts) = (c.clone(), opts.clone());
            async move {
                c.get(format!("{prefix}/"), Some(opts))
                    .await
                    .map_err(|e| etcd_err("get", e))
            }
        },
    )
    .await;
    let r = r.map_err(|e| {
        format!(
            "list the keys under {prefix}/: {e}{}",
            tries_note(tries, RETRIED)
        )
    })?;
    Ok(r.kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect())
}

/// Deletes every key under `prefix/`: how many there were.
async fn remove(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
) -> Result<u64, String> {
    let c = client(info, login).await?;
    // Deleting a range again deletes nothing more; the count is then the last try's, so a try
    // whose answer was lost after it deleted leaves those keys out of it.
    let (r, tries) = retrying(
        RetryPolicy::default(),
        Instant::now() + KEYS_RETRY_FOR,
        || {
            let mut c = c.clone();
            async move {
                c.delete(
                    format!("{prefix}/"),
                    Some(DeleteOptions::new().with_prefix()),
                )
                .await
                .map_err(|e| etcd_err("delete", e))
            }
        },
    )
    .await;
    let r = r.map_err(|e| {
        format!(
            "delete the keys under {prefix}/: {e}{}",
            tries_note(tries, RETRIED)
        )
    })?;
    Ok(r.deleted().max(0) as u64)
}
