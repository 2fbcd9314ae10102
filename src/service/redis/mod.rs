//! Redis 7.0 with Sentinel: one master with replicas and three Sentinels (provider in
//! `provider.rs`), locked through the single-instance recipe in `recipe/`. Keys
//! expire by wall clock, so a clock fault shortens their TTLs.

pub(super) mod floor;
pub(super) mod keys;
pub(super) mod provider;
pub mod recipe;

use std::time::Instant;

use self::recipe::{RedisRecipe, RedisTarget};
use super::{LockService, TargetOps};
use crate::cluster::{
    BoxFuture, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec, Provider,
};
use crate::recipe::{AnyRecipe, LockError, RecipeConfig};
use crate::system::System;

/// Redis with Sentinel behind [`Provider`] and [`LockService`].
pub(super) struct Redis;

/// This folder's entry in [`super::SERVICES`].
pub(super) static SERVICE: &dyn LockService = &Redis;

impl Provider for Redis {
    fn system(&self) -> System {
        System::Redis
    }
    /// With TLS, every data node also listens with `tls-port 6380` (`tls-auth-clients yes`); Sentinels and replication stay plain.
    fn tls_port(&self) -> Option<u16> {
        Some(6380)
    }

    fn node_specs(&self, run_id: &str, size: usize, opts: &ClusterOptions) -> Vec<NodeSpec> {
        provider::node_specs(run_id, size, opts.redis.persistence)
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
    fn leaderless_view<'a>(&'a self, cluster: &'a Cluster) -> BoxFuture<'a, String> {
        Box::pin(provider::sentinels_view(cluster))
    }
    fn settled<'a>(&'a self, cluster: &'a Cluster) -> BoxFuture<'a, Result<(), String>> {
        // Agreeing on a master is not enough while a failover is pending: none may see it down.
        Box::pin(provider::master_unflagged(cluster))
    }
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(provider::server_version(endpoint))
    }
}

/// Where a client finds the master of the cluster `info` describes: through its Sentinels,
/// or (a target without Sentinels) at its one endpoint.
pub(super) fn target_of(info: &ConnectInfo) -> RedisTarget {
    if info.sentinel_endpoints.is_empty() && !info.endpoints.is_empty() {
        return RedisTarget::Single {
            endpoint: info.endpoints[0].clone(),
        };
    }
    RedisTarget::Sentinel {
        sentinels: info.sentinel_endpoints.clone(),
        master_name: info
            .master_name
            .clone()
            .unwrap_or_else(|| provider::MASTER_NAME.to_string()),
        address_map: info
            .address_map
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

impl LockService for Redis {
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            let target = target_of(info);
            Ok(AnyRecipe::new(
                RedisRecipe::connect(target, config, deadline).await?,
            ))
        })
    }
    fn target_ops(&self) -> Option<TargetOps> {
        Some(keys::OPS)
    }
    fn floor(&self) -> Option<super::FloorProbe> {
        Some(floor::PROBE)
    }
}
