//! What the Redis recipes wrote under a prefix on one server, for runs on a cluster lockbench
//! did not start (a target): listed before the run, removed after it. Every key the recipes
//! write is `<prefix>/...` (`scripts::Keys`), so `SCAN MATCH <prefix>/*` finds exactly
//! theirs (a target's prefix holds no glob character: `target::validate` allows letters,
//! digits, `.`, `_`, `-` and `/`).

use std::time::{Duration, Instant};

use super::server::Server;
use super::{RedisTarget, resolve};
use crate::recipe::{Credentials, LockError, RecipeConfig};

/// Keys one SCAN step asks for, and one DEL removes.
const BATCH: usize = 500;

fn server(
    endpoint: &str,
    login: Option<&Credentials>,
    limit: Duration,
) -> Result<Server, LockError> {
    Server::new(endpoint, limit, login)
}

fn left(deadline: Instant) -> Result<Duration, LockError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(LockError::Connection(
            "the deadline passed before the key listing or removal finished".into(),
        ));
    }
    Ok(left)
}

async fn scan_step(
    node: &Server,
    cursor: u64,
    pattern: &str,
    deadline: Instant,
) -> Result<(u64, Vec<String>), LockError> {
    let mut cmd = ::redis::cmd("SCAN");
    cmd.arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(BATCH);
    node.query(&cmd, left(deadline)?).await
}

/// Up to `limit` keys under `prefix/` on the server at `endpoint`, by `deadline`.
pub async fn keys_under(
    endpoint: &str,
    login: Option<&Credentials>,
    prefix: &str,
    limit: usize,
    deadline: Instant,
) -> Result<Vec<String>, LockError> {
    let node = server(endpoint, login, left(deadline)?)?;
    let pattern = format!("{prefix}/*");
    let (mut cursor, mut found) = (0u64, Vec::new());
    loop {
        let (next, keys) = scan_step(&node, cursor, &pattern, deadline).await?;
        found.extend(keys);
        cursor = next;
        if cursor == 0 || found.len() >= limit {
            found.truncate(limit);
            node.shutdown().await;
            return Ok(found);
        }
    }
}

/// Deletes every key under `prefix/` on the server at `endpoint`, by `deadline`: how many.
pub async fn remove_under(
    endpoint: &str,
    login: Option<&Credentials>,
    prefix: &str,
    deadline: Instant,
) -> Result<u64, LockError> {
    let node = server(endpoint, login, left(deadline)?)?;
    let pattern = format!("{prefix}/*");
    let (mut cursor, mut removed) = (0u64, 0u64);
    loop {
        let (next, keys) = scan_step(&node, cursor, &pattern, deadline).await?;
        if !keys.is_empty() {
            let mut del = ::redis::cmd("DEL");
            for k in &keys {
                del.arg(k);
            }
            removed += node.query::<u64>(&del, left(deadline)?).await?;
        }
        cursor = next;
        if cursor == 0 {
            node.shutdown().await;
            return Ok(removed);
        }
    }
}

/// `INFO server` of the server at `endpoint`, logged in with `login`, by `deadline`.
pub async fn info_server(
    endpoint: &str,
    login: Option<&Credentials>,
    deadline: Instant,
) -> Result<String, LockError> {
    let node = server(endpoint, login, left(deadline)?)?;
    let text = node
        .query::<String>(::redis::cmd("INFO").arg("server"), left(deadline)?)
        .await;
    node.shutdown().await;
    text
}

/// The first word of `ROLE` of the server at `endpoint` (`master`, `slave`, `sentinel`),
/// logged in with `login`, by `deadline`.
pub async fn role(
    endpoint: &str,
    login: Option<&Credentials>,
    deadline: Instant,
) -> Result<String, LockError> {
    let node = server(endpoint, login, left(deadline)?)?;
    let reply = node
        .query::<::redis::Value>(&::redis::cmd("ROLE"), left(deadline)?)
        .await;
    node.shutdown().await;
    match reply? {
        ::redis::Value::Array(items) => match items.first() {
            Some(first) => ::redis::from_redis_value_ref::<String>(first)
                .map_err(|e| LockError::Server(format!("{endpoint}: ROLE: {e}"))),
            None => Err(LockError::Server(format!("{endpoint}: ROLE said nothing"))),
        },
        other => Err(LockError::Server(format!(
            "{endpoint}: ROLE said {other:?}"
        ))),
    }
}

/// The master's endpoint as `target` finds it (through its Sentinels, or fixed), by `deadline`.
pub async fn master_endpoint(
    target: &RedisTarget,
    cfg: &RecipeConfig,
    deadline: Instant,
) -> Result<String, LockError> {
    resolve(target, cfg, deadline).await
}
