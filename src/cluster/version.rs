//! The server version a cluster runs, asked of one running server node (ZooKeeper `srvr`, etcd's
//! status call, Redis `INFO server`), for the environment a run records. Every call has a
//! deadline; a failure reads "unknown (why)" and never fails a run.

use std::time::Duration;

use super::{Cluster, NodeState};

/// How long asking for the version may take in all.
const VERSION_DEADLINE: Duration = Duration::from_secs(6);

/// The first running server's version, e.g. `3.8.0`, or `unknown (why)`.
pub(crate) async fn server_version(cluster: &Cluster) -> String {
    let Some(node) = cluster.servers().find(|n| n.state() == NodeState::Running) else {
        return "unknown (no server node is running)".into();
    };
    let endpoint = node.endpoint();
    let ask = async { cluster.system.service().server_version(&endpoint).await };
    match tokio::time::timeout(VERSION_DEADLINE, ask).await {
        Ok(Ok(v)) if !v.is_empty() => v,
        Ok(Ok(_)) => format!("unknown ({} reported an empty version)", node.name()),
        Ok(Err(e)) => format!("unknown ({}: {e})", node.name()),
        Err(_) => format!(
            "unknown ({} did not answer within {VERSION_DEADLINE:?})",
            node.name()
        ),
    }
}

/// The version a Redis server at `endpoint` reports in `INFO server` (Redis and Redlock).
pub(crate) async fn redis_server_version(endpoint: &str) -> Result<String, String> {
    let v = super::redis::command(endpoint, redis::cmd("INFO").arg("server")).await?;
    let text: String = redis::from_redis_value_ref(&v).map_err(|e| e.to_string())?;
    redis_version(&text).ok_or_else(|| no_version(&text))
}

/// The error for a reply that holds no version.
pub(crate) fn no_version(reply: &str) -> String {
    let head: String = reply.chars().take(80).collect();
    format!("no version in the reply {head:?}")
}

/// `Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on ...` → `3.8.0`.
pub(crate) fn zookeeper_version(srvr: &str) -> Option<String> {
    let v = srvr
        .lines()
        .find_map(|l| l.strip_prefix("Zookeeper version:"))?
        .trim();
    let v = v.split([',', ' ']).next()?;
    // Release builds append the commit after a dash: the version is what comes before it.
    let v = v.split_once('-').map_or(v, |(release, _)| release);
    (!v.is_empty()).then(|| v.to_string())
}

/// The `redis_version:7.0.15` line of `INFO server`.
fn redis_version(info: &str) -> Option<String> {
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_versions_from_the_servers_replies() {
        assert_eq!(
            zookeeper_version(
                "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on 2022-02-25 08:49 UTC\nMode: leader\n"
            )
            .as_deref(),
            Some("3.8.0")
        );
        assert_eq!(
            zookeeper_version("Zookeeper version: 3.8.0\n").as_deref(),
            Some("3.8.0")
        );
        assert_eq!(zookeeper_version("Mode: leader\n"), None);
        assert_eq!(
            redis_version("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n")
                .as_deref(),
            Some("7.0.15")
        );
        assert_eq!(redis_version("# Server\r\n"), None);
    }
}
