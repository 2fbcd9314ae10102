//! Redlock: `redlock1..N`, independent Redis masters with no replication (and, by default, no
//! persistence, so a restarted master has forgotten its locks); ready when every one answers PING.

use crate::cluster::{Cluster, NodeRole, NodeSpec, NodeState};
use crate::service::redis::provider as redis;

pub(crate) fn node_specs(size: usize, persist: bool) -> Vec<NodeSpec> {
    (1..=size)
        .map(|i| NodeSpec {
            name: format!("redlock{i}"),
            role: NodeRole::Server,
            port: redis::CLIENT_PORT,
            tls_port: None,
            env: vec![
                ("REDIS_ROLE".into(), "master".into()),
                (
                    "REDIS_PERSIST".into(),
                    if persist { "aof" } else { "none" }.into(),
                ),
            ],
        })
        .collect()
}

pub(crate) async fn ready(cluster: &Cluster) -> Result<(), String> {
    for n in cluster.servers() {
        if n.state() != NodeState::Running {
            return Err(format!("{} is {:?}", n.name(), n.state()));
        }
        let v = redis::command(&n.endpoint(), &::redis::cmd("PING")).await?;
        if v != ::redis::Value::SimpleString("PONG".into()) {
            return Err(format!("{} answered PING with {v:?}", n.name()));
        }
    }
    Ok(())
}
