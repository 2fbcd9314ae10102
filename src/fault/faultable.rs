//! The seam every fault acts through: a cluster's servers by name ([`Faultable`]), which a real
//! [`Cluster`] implements and test doubles can. Its methods are the primitives (kill/restart,
//! pause/resume, partition/heal, a clock's reach); the iptables mechanics of a partition stay in
//! `cluster/partition.rs`. A new primitive is a method here with a default (so the test doubles
//! need no change) and its `Cluster` implementation.

use std::future::Future;
use std::time::{Duration, Instant};

use super::clock::{ClockAccess, clock_access};
use super::partition::Grudge;
use crate::cluster::{Cluster, ClusterError, DataOnRestart, NodeRole, NodeState};

/// What faults act on: a cluster's servers by name.
///
/// Contract: every method returns once the change is in effect (or failed); `heal` removes every
/// partition rule; `restart` and `resume` of a node that is already running do nothing, so an
/// undo can be repeated.
pub trait Faultable: Sync {
    /// The server names faults may target, in a stable order.
    fn servers(&self) -> Vec<String>;
    /// The current leader's name, if there is one (for Redlock, which has none, a master).
    fn leader(&self) -> impl Future<Output = Result<Option<String>, ClusterError>>;
    /// Kills `node` (SIGKILL).
    fn kill(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Starts a killed `node` again.
    fn restart(
        &self,
        node: &str,
        data: DataOnRestart,
    ) -> impl Future<Output = Result<(), ClusterError>>;
    /// Promotes a replica to lead (PostgreSQL, MariaDB: no failover of their own): the node
    /// that now leads. Refused by default.
    fn promote(&self) -> impl Future<Output = Result<String, ClusterError>> {
        std::future::ready(Err(ClusterError::Fault {
            node: "-".into(),
            error: "this cluster has no replica to promote".into(),
        }))
    }
    /// Freezes `node`.
    fn pause(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Thaws `node`.
    fn resume(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Cuts every link `grudge` names (on top of the cuts already made).
    fn partition(&self, grudge: &Grudge) -> impl Future<Output = Result<(), ClusterError>>;
    /// Nodes that are no server but stand beside one and share its side of a partition, as
    /// `(server, companion)` pairs: each Redis server's Sentinel. None by default.
    fn companions(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Removes every partition.
    fn heal(&self) -> impl Future<Output = Result<(), ClusterError>>;
    /// Removes the cuts of `grudge` and keeps those of other partitions still in effect (two
    /// windows may overlap when a start is slow). By default every partition is removed.
    fn heal_partition(&self, grudge: &Grudge) -> impl Future<Output = Result<(), ClusterError>> {
        let _ = grudge;
        self.heal()
    }
    /// How a clock fault reaches `node`: a Redis server, or monotonic leases that ignore it.
    fn clock(&self, node: &str) -> Result<ClockAccess, ClusterError>;
    /// The servers a partition in effect now cuts `node` off from, in name order (none by
    /// default): a node restarted inside a partition may not serve its cluster until the heal.
    fn cut_from(&self, node: &str) -> Vec<String> {
        let _ = node;
        Vec::new()
    }
    /// One check that `node` serves its cluster now (after a restart): `Err` says why not.
    /// Every node serves by default (a test double with nothing to rejoin).
    fn serving(&self, node: &str) -> impl Future<Output = Result<(), String>> {
        let _ = node;
        std::future::ready(Ok(()))
    }
    /// One check that the whole cluster is healthy (every node up, one leader): `Err` says
    /// what is not. Healthy by default.
    fn healthy(&self) -> impl Future<Output = Result<(), String>> {
        std::future::ready(Ok(()))
    }
}

/// How long a restarted node may take to serve its cluster again before its fault's end is
/// recorded as `info` (a Redis master killed and restarted is turned into a replica by
/// Sentinel 13 s or so after the kill; an etcd member that rejoins empty must fetch a snapshot).
pub const REJOIN_TIMEOUT: Duration = Duration::from_secs(45);
/// How often a node that is not yet serving is asked again.
const REJOIN_POLL: Duration = Duration::from_millis(200);

/// Polls `check` until it holds, or `timeout` passes: `Ok` with how long it took, or the last
/// reason it gave.
pub async fn wait_until<F, Fut>(timeout: Duration, mut check: F) -> Result<Duration, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let started = Instant::now();
    loop {
        // A probe that hangs past the deadline is cut off: every call has a deadline.
        let left = timeout.saturating_sub(started.elapsed());
        let last = match tokio::time::timeout(left.max(REJOIN_POLL), check()).await {
            Ok(Ok(())) => return Ok(started.elapsed()),
            Ok(Err(why)) => why,
            Err(_) => "the check did not answer in time".to_string(),
        };
        if started.elapsed() >= timeout {
            return Err(last);
        }
        tokio::time::sleep(REJOIN_POLL).await;
    }
}

impl Faultable for Cluster {
    fn servers(&self) -> Vec<String> {
        Cluster::servers(self)
            .map(|n| n.name().to_string())
            .collect()
    }
    async fn leader(&self) -> Result<Option<String>, ClusterError> {
        if self.system().facts().leaderless {
            // No leader: `leader` faults hit the first master that is up (reproducibly).
            return Ok(Cluster::servers(self)
                .find(|n| n.state() == NodeState::Running)
                .map(|n| n.name().to_string()));
        }
        Cluster::leader(self).await
    }
    async fn kill(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::kill(self, node).await
    }
    async fn restart(&self, node: &str, data: DataOnRestart) -> Result<(), ClusterError> {
        Cluster::restart(self, node, data).await
    }
    async fn promote(&self) -> Result<String, ClusterError> {
        Cluster::promote(self).await
    }
    async fn pause(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::pause(self, node).await
    }
    async fn resume(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::resume(self, node).await
    }
    async fn partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        Cluster::partition_grudge(self, grudge).await
    }
    fn companions(&self) -> Vec<(String, String)> {
        // Sentinel i watches from beside Redis server i, so a split decides what each
        // Sentinel sees of the master, and a failover follows the split.
        let sentinels: Vec<String> = self
            .nodes()
            .iter()
            .filter(|n| n.role() == NodeRole::Sentinel)
            .map(|n| n.name().to_string())
            .collect();
        Cluster::servers(self)
            .map(|n| n.name().to_string())
            .zip(sentinels)
            .collect()
    }
    async fn heal(&self) -> Result<(), ClusterError> {
        Cluster::heal(self).await
    }
    async fn heal_partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        Cluster::heal_grudge(self, grudge).await
    }
    async fn serving(&self, node: &str) -> Result<(), String> {
        Cluster::serving(self, node).await
    }
    fn cut_from(&self, node: &str) -> Vec<String> {
        Cluster::cut_from(self, node)
    }
    async fn healthy(&self) -> Result<(), String> {
        Cluster::healthy(self).await
    }
    fn clock(&self, node: &str) -> Result<ClockAccess, ClusterError> {
        let n = self.node(node)?;
        if n.role() != NodeRole::Server {
            return Err(ClusterError::Fault {
                node: node.to_string(),
                error: "a clock fault targets servers; this node holds no lock keys".into(),
            });
        }
        Ok(clock_access(self.system(), n.endpoint()))
    }
}
