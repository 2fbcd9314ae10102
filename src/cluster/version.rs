//! The server version a cluster runs, asked of one running server node through its system's
//! [`super::Provider::server_version`], for the environment a run records. Every call has a
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
    let ask = async { cluster.provider.server_version(&endpoint).await };
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

/// The error for a reply that holds no version.
pub(crate) fn no_version(reply: &str) -> String {
    let head: String = reply.chars().take(80).collect();
    format!("no version in the reply {head:?}")
}
