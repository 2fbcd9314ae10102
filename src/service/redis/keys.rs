//! The keys lockbench's Redis recipes wrote under a target's prefix, on the master (Redis with
//! Sentinel, found through the Sentinels) or on every master (Redlock).

use std::time::{Duration, Instant};

use crate::cluster::ConnectInfo;
use crate::recipe::redis::keyspace;
use crate::recipe::{Credentials, RecipeConfig};
use crate::service::TargetOps;
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

/// How long one listing or removal may take on one server.
const LIMIT: Duration = Duration::from_secs(30);

/// The servers that hold the keys: every master (Redlock), or the master (Redis: the one its
/// Sentinels name, or a target's one endpoint).
pub(in crate::service) async fn servers(
    info: &ConnectInfo,
    login: Option<&Credentials>,
) -> Result<Vec<String>, String> {
    if info.system == System::Redlock {
        return Ok(info.endpoints.clone());
    }
    let target = super::target_of(info);
    let cfg = RecipeConfig {
        credentials: login.cloned(),
        ..RecipeConfig::default()
    };
    let master = keyspace::master_endpoint(&target, &cfg, Instant::now() + LIMIT)
        .await
        .map_err(|e| e.to_string())?;
    Ok(vec![master])
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
    let mut found = Vec::new();
    for s in servers(info, login).await? {
        let keys = keyspace::keys_under(&s, login, prefix, limit, Instant::now() + LIMIT)
            .await
            .map_err(|e| format!("{s}: list the keys under {prefix}/: {e}"))?;
        found.extend(keys.into_iter().map(|k| format!("{k} (on {s})")));
    }
    found.truncate(limit);
    Ok(found)
}

/// Deletes every key under `prefix/` on every server that holds keys: how many.
async fn remove(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
) -> Result<u64, String> {
    let mut removed = 0;
    for s in servers(info, login).await? {
        removed += keyspace::remove_under(&s, login, prefix, Instant::now() + LIMIT)
            .await
            .map_err(|e| format!("{s}: delete the keys under {prefix}/: {e}"))?;
    }
    Ok(removed)
}
