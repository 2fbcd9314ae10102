//! What lockbench's etcd recipes wrote under a target's prefix: listed before a run (to refuse a
//! prefix that holds someone else's keys) and removed after it. Every key the recipes write is
//! `<prefix>/...` (see `recipe/etcd`), so a range over `<prefix>/` is exactly theirs.

use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, DeleteOptions, GetOptions};

use crate::cluster::{ConnectInfo, PROBE_TIMEOUT};
use crate::recipe::Credentials;
use crate::recipe::etcd::etcd_err;
use crate::recipe::retry::{RetryPolicy, retrying};
use crate::service::TargetOps;

/// How long listing or removing the keys asks again through errors a leader election gives
/// ("etcdserver: leader changed", "no leader", an unanswered request), within the caller's
/// deadline: a run whose faults just paused or killed the leader lists and cleans up after the
/// election instead of failing on its first answer (seen in CI: `tests/target.rs`, a pause by
/// command, "leader changed" on the next run's listing).
const RETRY_FOR: Duration = Duration::from_secs(30);

/// What the error says when the tries ran out: how many there were.
fn after(tries: u32) -> String {
    match tries {
        1 => String::new(),
        n => format!(" ({n} tries: an election's errors are asked again for up to {RETRY_FOR:?})"),
    }
}

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

async fn client(info: &ConnectInfo, login: Option<&Credentials>) -> Result<Client, String> {
    let (urls, opts) = crate::recipe::etcd::with_access(
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
    let (r, tries) = retrying(RetryPolicy::default(), Instant::now() + RETRY_FOR, || {
        let (mut c, opts) = (c.clone(), opts.clone());
        async move {
            c.get(format!("{prefix}/"), Some(opts))
                .await
                .map_err(|e| etcd_err("get", e))
        }
    })
    .await;
    let r = r.map_err(|e| format!("list the keys under {prefix}/: {e}{}", after(tries)))?;
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
    let (r, tries) = retrying(RetryPolicy::default(), Instant::now() + RETRY_FOR, || {
        let mut c = c.clone();
        async move {
            c.delete(
                format!("{prefix}/"),
                Some(DeleteOptions::new().with_prefix()),
            )
            .await
            .map_err(|e| etcd_err("delete", e))
        }
    })
    .await;
    let r = r.map_err(|e| format!("delete the keys under {prefix}/: {e}{}", after(tries)))?;
    Ok(r.deleted().max(0) as u64)
}
