//! Whether one node serves its cluster again after a restart, and whether the whole cluster is
//! healthy before a cell: the checks behind [`Cluster::serving`] and [`Cluster::healthy`].
//!
//! A restarted container is not yet a member doing its job: what "doing its job" means is each
//! system's [`super::Provider::serving`] (its service folder says it per system).

use super::node::Node;
use super::{Cluster, NodeState};

/// One check of `node`: `Ok` when it serves its cluster now, else why not.
pub(crate) async fn serving(cluster: &Cluster, node: &Node) -> Result<(), String> {
    if node.state() != NodeState::Running {
        return Err(format!("{} is {:?}", node.name(), node.state()));
    }
    cluster.provider.serving(cluster, node).await
}

/// One pass of the health check a cell starts on: every node up and one leader (the readiness
/// [`Cluster::start`] waits for).
pub(crate) async fn healthy(cluster: &Cluster) -> Result<(), String> {
    for n in cluster.nodes() {
        if n.state() != NodeState::Running {
            return Err(format!("{} is {:?}", n.name(), n.state()));
        }
    }
    cluster.ready_once().await?;
    cluster.provider.settled(cluster).await
}
