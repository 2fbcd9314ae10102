//! What a [`Cluster`] asks of its system: which nodes to start, when they serve, who leads, how
//! a wiped node rejoins, which version runs. Each system's service implements it in
//! `service/<name>/provider.rs`; the cluster is handed it at start ([`Cluster::start`]), so this
//! module names no system.

use std::future::Future;
use std::pin::Pin;

use super::{Cluster, ClusterError, ClusterOptions, Node, NodeSpec};
use crate::system::System;

/// A boxed future, as [`Provider`]'s methods return them (a trait object cannot name its
/// futures' types). None of them is on a per-acquisition path.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One system's cluster provider.
///
/// Contract: every method that talks to a server has a deadline (a probe ends within
/// [`super::PROBE_TIMEOUT`] per call) and reports failure as text or a typed error, never by
/// hanging or panicking; none keeps state between calls (the [`Cluster`] holds it).
pub trait Provider: Send + Sync + 'static {
    /// The system it starts.
    fn system(&self) -> System;

    /// The nodes to start, in start order (a master before its replicas and watchers), for a
    /// validated `size`.
    fn node_specs(&self, run_id: &str, size: usize, opts: &ClusterOptions) -> Vec<NodeSpec>;

    /// The TLS client port its servers open inside their containers when started with TLS
    /// (their entrypoint reads the certificates from `LB_TLS_*`); `None` (the default) when the
    /// system is not offered with TLS.
    fn tls_port(&self) -> Option<u16> {
        None
    }

    /// One readiness check: `Ok` when the cluster serves clients (one leader agreed on, every
    /// server answering), else what is not yet so.
    fn ready<'a>(&'a self, cluster: &'a Cluster) -> BoxFuture<'a, Result<(), String>>;

    /// The node that leads now, `None` when the system has no leader or none is seen now.
    fn leader<'a>(
        &'a self,
        cluster: &'a Cluster,
    ) -> BoxFuture<'a, Result<Option<String>, ClusterError>>;

    /// One check that a running `node` does its job in the cluster again (after a restart or
    /// resume): `Err` says why not.
    fn serving<'a>(
        &'a self,
        cluster: &'a Cluster,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(), String>>;

    /// What the cluster's own failover machinery reports while no new leader is seen (for an
    /// error that says why an election did not finish); empty (the default) when it has nothing
    /// to add.
    fn leaderless_view<'a>(&'a self, _cluster: &'a Cluster) -> BoxFuture<'a, String> {
        Box::pin(async { String::new() })
    }

    /// What must hold beyond readiness before a cell starts (e.g. no failover pending).
    fn settled<'a>(&'a self, _cluster: &'a Cluster) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    /// The server version the server at `endpoint` reports (e.g. `3.8.0`), with a deadline.
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>>;

    /// Promotes a replica to lead, where the system has no failover of its own (PostgreSQL,
    /// MariaDB: the `promote` fault is this operator's step): the name of the node that now
    /// leads, once it takes writes. `None` when the system has nothing to promote (its own
    /// election or failover does it, or it has no replicas).
    fn promote<'a>(
        &'a self,
        _cluster: &'a Cluster,
    ) -> Option<BoxFuture<'a, Result<String, ClusterError>>> {
        None
    }

    /// Brings a killed `node` back with an empty data directory when the system cannot simply
    /// start it again (etcd refuses a member twice); `None` to restart it as it is.
    fn rejoin_wiped<'a>(
        &'a self,
        _cluster: &'a Cluster,
        _node: &'a Node,
    ) -> Option<BoxFuture<'a, Result<(), ClusterError>>> {
        None
    }
}
