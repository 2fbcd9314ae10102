//! Memcached: `memcached1..N`, independent servers with no replication and nothing on disk;
//! ready when every one is running and answers the meta no-op (`mn` → `MN`).

use super::proto::{Reply, Request, probe};
use crate::cluster::{Cluster, NodeRole, NodeSpec, NodeState, PROBE_TIMEOUT};

/// The server's port inside its container.
pub(crate) const CLIENT_PORT: u16 = 11211;

pub(crate) fn node_specs(size: usize) -> Vec<NodeSpec> {
    super::recipe::node_names(size)
        .into_iter()
        .map(|name| NodeSpec {
            name,
            role: NodeRole::Server,
            port: CLIENT_PORT,
            tls_port: None,
            env: Vec::new(),
        })
        .collect()
}

/// The server at `endpoint` answers `mn` with `MN`.
pub(crate) async fn answers(endpoint: String) -> Result<(), String> {
    match probe(&endpoint, &Request::Noop, PROBE_TIMEOUT).await? {
        Reply::Noop => Ok(()),
        other => Err(format!("mn answered {other:?}")),
    }
}

pub(crate) async fn ready(cluster: &Cluster) -> Result<(), String> {
    for n in cluster.servers() {
        if n.state() != NodeState::Running {
            return Err(format!("{} is {:?}", n.name(), n.state()));
        }
        answers(n.endpoint())
            .await
            .map_err(|e| format!("{}: {e}", n.name()))?;
    }
    Ok(())
}

/// The version the server at `endpoint` reports (`version` → `VERSION 1.6.18`).
pub(crate) async fn server_version(endpoint: &str) -> Result<String, String> {
    match probe(endpoint, &Request::Version, PROBE_TIMEOUT).await? {
        Reply::Version(v) if !v.is_empty() => Ok(v),
        other => Err(crate::cluster::no_version(&format!("{other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_servers_named_in_order() {
        let specs = node_specs(3);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["memcached1", "memcached2", "memcached3"]);
        assert!(specs.iter().all(|s| s.role == NodeRole::Server));
        assert!(
            specs
                .iter()
                .all(|s| s.port == CLIENT_PORT && s.env.is_empty())
        );
    }
}
