//! etcd 3.4: members `etcd1..etcdN` (provider in `provider.rs`), locked through the
//! revision-ordered recipe or the server's own Lock API in `recipe/`. Leases run on
//! monotonic time, so a clock fault has nothing to move.

mod floor;
mod keys;
mod leases;
mod provider;
pub mod recipe;

use std::time::Instant;

use super::{LockService, TargetOps};
use crate::cluster::{
    BoxFuture, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec, PROBE_TIMEOUT,
    Provider,
};
use crate::recipe::{AnyRecipe, LockError, RecipeConfig};
use crate::system::System;

/// etcd behind [`Provider`] and [`LockService`].
pub(super) struct Etcd;

/// This folder's entry in [`super::SERVICES`].
pub(super) static SERVICE: &dyn LockService = &Etcd;

impl Provider for Etcd {
    fn system(&self) -> System {
        System::Etcd
    }
    /// With TLS, etcd also listens on https://0.0.0.0:2378 with client certificates required.
    fn tls_port(&self) -> Option<u16> {
        Some(2378)
    }

    fn node_specs(&self, run_id: &str, size: usize, _opts: &ClusterOptions) -> Vec<NodeSpec> {
        provider::node_specs(run_id, size)
    }
    fn ready<'a>(&'a self, cluster: &'a Cluster) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(provider::ready(cluster))
    }
    fn leader<'a>(
        &'a self,
        cluster: &'a Cluster,
    ) -> BoxFuture<'a, Result<Option<String>, ClusterError>> {
        Box::pin(provider::leader(cluster))
    }
    fn serving<'a>(
        &'a self,
        cluster: &'a Cluster,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(provider::serving(cluster, node))
    }
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let mut c = provider::client_for(endpoint).await?;
            let st = tokio::time::timeout(PROBE_TIMEOUT, c.status())
                .await
                .map_err(|_| format!("status took over {PROBE_TIMEOUT:?}"))?
                .map_err(|e| e.to_string())?;
            Ok(st.version().to_string())
        })
    }
    fn rejoin_wiped<'a>(
        &'a self,
        cluster: &'a Cluster,
        node: &'a Node,
    ) -> Option<BoxFuture<'a, Result<(), ClusterError>>> {
        // etcd refuses to bootstrap a member twice: replace it through a running member and
        // start it empty with `--initial-cluster-state existing`.
        Some(Box::pin(async move {
            provider::replace_member(cluster, node).await?;
            node.restart_etcd_joining(&cluster.docker).await
        }))
    }
}

impl LockService for Etcd {
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        _deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            Ok(AnyRecipe::new(
                recipe::EtcdRecipe::connect(&info.endpoints, config).await?,
            ))
        })
    }
    fn target_ops(&self) -> Option<TargetOps> {
        Some(keys::OPS)
    }
    fn floor(&self) -> Option<super::FloorProbe> {
        Some(floor::PROBE)
    }
    fn live_leases(&self) -> Option<super::LiveLeases> {
        Some(|info| Box::pin(leases::live(info)))
    }
}
