//! The keys lockbench's Redis recipes wrote under a target's prefix, on the master (Redis with
//! Sentinel, found through the Sentinels) or on every master (Redlock).

use std::future::Future;
use std::time::{Duration, Instant};

use crate::cluster::ConnectInfo;
use crate::recipe::retry::{RetryPolicy, retrying};
use crate::recipe::{Credentials, LockError, RecipeConfig};
use crate::service::redis::recipe::keyspace;
use crate::service::{KEYS_RETRY_FOR, TargetOps, tries_note};
use crate::system::System;

/// Redis' and Redlock's [`TargetOps`]: `INFO` needs the login on a server that asks for one.
pub(in crate::service) const OPS: TargetOps = TargetOps {
    list: |info, login, prefix, limit| Box::pin(list(info, login, prefix, limit)),
    remove: |info, login, prefix| Box::pin(remove(info, login, prefix)),
    version: Some(|endpoint, login| Box::pin(version(endpoint, login))),
    leads: Some(|endpoint, login| Box::pin(leads(endpoint, login))),
};

/// Redlock's: its masters are independent, so none leads.
pub(in crate::service) const REDLOCK_OPS: TargetOps = TargetOps { leads: None, ..OPS };

/// Whether the server at `endpoint` says it is a master (`ROLE`).
async fn leads(endpoint: &str, login: Option<&Credentials>) -> Result<bool, String> {
    let deadline = Instant::now() + crate::cluster::PROBE_TIMEOUT;
    let role = keyspace::role(endpoint, login, deadline)
        .await
        .map_err(|e| e.to_string())?;
    Ok(role == "master")
}

/// How long one listing or removal may take on one server, one try.
const LIMIT: Duration = Duration::from_secs(30);

/// What the retries of a listing or removal ride out: a refused or reset connection, a
/// loading server, Sentinels that name no master yet or one that says it is a replica.
const RETRIED: &str = "a failover's errors";

/// The servers that hold the keys: every master (Redlock), or the master (Redis: the one its
/// Sentinels name, or a target's one endpoint).
pub(in crate::service) async fn servers(
    info: &ConnectInfo,
    login: Option<&Credentials>,
) -> Result<Vec<String>, String> {
    if info.system == System::Redlock {
        return Ok(info.endpoints.clone());
    }
    master(info, login)
        .await
        .map(|m| vec![m])
        .map_err(|e| e.to_string())
}

/// The master a Redis target's Sentinels name now (or its one endpoint).
async fn master(info: &ConnectInfo, login: Option<&Credentials>) -> Result<String, LockError> {
    let target = super::target_of(info);
    let cfg = RecipeConfig {
        credentials: login.cloned(),
        ..RecipeConfig::default()
    };
    keyspace::master_endpoint(&target, &cfg, Instant::now() + LIMIT).await
}

/// Runs `op` (`what` it does, for the error) on every server that holds keys, each asked again
/// through retryable errors until `until` (listing and removal give it [`KEYS_RETRY_FOR`]); on Redis
/// each try asks the Sentinels for the master again, since a failover moves it. `op` must be
/// safe to repeat.
async fn on_each_server<T, F, Fut>(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    what: &str,
    until: Instant,
    op: F,
) -> Result<Vec<(String, T)>, String>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<T, LockError>>,
{
    let op = &op;
    if info.system == System::Redlock {
        let mut done = Vec::new();
        for s in &info.endpoints {
            let (r, tries) = retrying(RetryPolicy::default(), until, || op(s.clone())).await;
            let r = r.map_err(|e| format!("{s}: {what}: {e}{}", tries_note(tries, RETRIED)))?;
            done.push((s.clone(), r));
        }
        return Ok(done);
    }
    let (r, tries) = retrying(RetryPolicy::default(), until, || async move {
        let s = master(info, login).await?;
        op(s.clone()).await.map(|r| (s, r))
    })
    .await;
    r.map(|done| vec![done])
        .map_err(|e| format!("{what}: {e}{}", tries_note(tries, RETRIED)))
}

/// The version the server at `endpoint` reports, logged in with `login`.
async fn version(endpoint: &str, login: Option<&Credentials>) -> Result<String, String> {
    let Some(login) = login else {
        return super::provider::server_version(endpoint).await;
    };
    let deadline = Instant::now() + crate::cluster::PROBE_TIMEOUT;
    let text = keyspace::info_server(endpoint, Some(login), deadline)
        .await
        .map_err(|e| e.to_string())?;
    super::provider::version(&text).ok_or_else(|| crate::cluster::no_version(&text))
}

/// Up to `limit` keys under `prefix/`, from every server that holds keys.
async fn list(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
    limit: usize,
) -> Result<Vec<String>, String> {
    let what = format!("list the keys under {prefix}/");
    // A read: asking again changes nothing.
    let until = Instant::now() + KEYS_RETRY_FOR;
    let per_server = on_each_server(info, login, &what, until, |s| async move {
        keyspace::keys_under(&s, login, prefix, limit, Instant::now() + LIMIT).await
    })
    .await?;
    let mut found: Vec<String> = per_server
        .into_iter()
        .flat_map(|(s, keys)| keys.into_iter().map(move |k| format!("{k} (on {s})")))
        .collect();
    found.truncate(limit);
    Ok(found)
}

/// Deletes every key under `prefix/` on every server that holds keys: how many. Deleting again
/// deletes nothing more; a server's count is its last try's, so a try that failed after some of
/// its deletions leaves those out of it.
async fn remove(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
) -> Result<u64, String> {
    let what = format!("delete the keys under {prefix}/");
    let until = Instant::now() + KEYS_RETRY_FOR;
    let per_server = on_each_server(info, login, &what, until, |s| async move {
        keyspace::remove_under(&s, login, prefix, Instant::now() + LIMIT).await
    })
    .await?;
    Ok(per_server.into_iter().map(|(_, n)| n).sum())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;

    fn info(system: System, endpoints: &[&str], sentinels: &[&str]) -> ConnectInfo {
        ConnectInfo {
            system,
            endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
            sentinel_endpoints: sentinels.iter().map(|e| e.to_string()).collect(),
            address_map: Default::default(),
            master_name: None,
        }
    }

    #[tokio::test]
    async fn each_redlock_master_is_asked_again_through_a_failover_s_errors() {
        let masters = info(System::Redlock, &["a:1", "b:2"], &[]);
        // "b" refuses twice (a restarting server), then answers.
        let refusals = Mutex::new(HashMap::from([("b:2".to_string(), 2)]));
        let calls = Mutex::new(Vec::new());
        let until = Instant::now() + Duration::from_secs(10);
        let done = on_each_server(&masters, None, "list", until, |s| {
            calls.lock().unwrap().push(s.clone());
            let refuse = match refusals.lock().unwrap().get_mut(&s) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            };
            async move {
                match refuse {
                    true => Err(LockError::Unavailable(format!("{s}: connection refused"))),
                    false => Ok(s.len()),
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(done, vec![("a:1".to_string(), 3), ("b:2".to_string(), 3)]);
        assert_eq!(*calls.lock().unwrap(), ["a:1", "b:2", "b:2", "b:2"]);
    }

    #[tokio::test]
    async fn an_error_no_retry_gets_past_stops_at_once_naming_the_server() {
        let masters = info(System::Redlock, &["a:1"], &[]);
        let calls = Mutex::new(0);
        let until = Instant::now() + Duration::from_secs(10);
        let r: Result<Vec<(String, ())>, String> =
            on_each_server(&masters, None, "list the keys", until, |s| {
                *calls.lock().unwrap() += 1;
                async move { Err(LockError::Server(format!("{s}: NOPERM"))) }
            })
            .await;
        assert_eq!(
            r.unwrap_err(),
            "a:1: list the keys: server error: a:1: NOPERM"
        );
        assert_eq!(*calls.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn each_try_on_redis_asks_the_sentinels_for_the_master_again() {
        // Nothing listens on port 1: the Sentinel refuses every time, so no try reaches `op`.
        let cluster = info(System::Redis, &["127.0.0.1:2"], &["127.0.0.1:1"]);
        let calls = Mutex::new(0);
        // A refused try takes about 0.5 s here (the client's own reconnection).
        let until = Instant::now() + Duration::from_secs(2);
        let r: Result<Vec<(String, ())>, String> =
            on_each_server(&cluster, None, "list the keys", until, |_| {
                *calls.lock().unwrap() += 1;
                async { Ok(()) }
            })
            .await;
        let e = r.unwrap_err();
        assert!(e.starts_with("list the keys: "), "{e}");
        assert!(e.contains("no Sentinel named a reachable master"), "{e}");
        let tries: u32 = e
            .split(" (")
            .last()
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(tries > 1, "the Sentinels were asked once: {e}");
        assert_eq!(*calls.lock().unwrap(), 0);
    }
}
