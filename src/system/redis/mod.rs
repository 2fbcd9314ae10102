//! Redis 7.0 with Sentinel: one master with replicas and three Sentinels (provider in
//! `cluster/redis.rs`), locked through the single-instance recipe in `recipe/redis/`. Keys
//! expire by wall clock, so a clock fault shortens their TTLs.

pub(super) mod provider;

use std::time::Instant;

use super::{BoxFuture, Facts, ImageKind, LockService, System};
use crate::cluster::{Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec};
use crate::fault::ClockAccess;
use crate::recipe::{AnyRecipe, LockError, RecipeConfig, RedisRecipe, RedisTarget, Strategy};

impl System {
    /// One Redis 7.0 master with replicas, watched by three Sentinels.
    #[allow(non_upper_case_globals)]
    pub const Redis: System = System::named("redis");
}

impl ImageKind {
    /// Redis and Sentinel from Debian's package (Redlock runs on it too).
    #[allow(non_upper_case_globals)]
    pub const Redis: ImageKind = ImageKind::new(
        "redis",
        "7.0",
        include_str!("../../../docker/redis/Dockerfile"),
        include_str!("../../../docker/redis/entrypoint.sh"),
    );
}

static FACTS: Facts = Facts {
    system: System::Redis,
    name: "redis",
    aliases: &[],
    // Data nodes (one master plus replicas); the three Sentinels come on top.
    default_size: 3,
    sizes: &[1, 2, 3, 4, 5],
    sizes_text: "1 to 5 (one master plus replicas)",
    image: ImageKind::Redis,
    // The unsafe ones run only when named (a workload's `strategies`, `--strategies`).
    strategies: &[
        Strategy::Herd,
        Strategy::Predecessor,
        Strategy::UnsafeDel,
        Strategy::UnsafeSetnxExpire,
    ],
    leaderless: false,
    colour: (0, 140, 100),
};

/// Redis with Sentinel behind [`LockService`].
pub(super) struct Redis;

impl LockService for Redis {
    fn facts(&self) -> &'static Facts {
        &FACTS
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
    fn settled<'a>(&'a self, cluster: &'a Cluster) -> BoxFuture<'a, Result<(), String>> {
        // Agreeing on a master is not enough while a failover is pending: none may see it down.
        Box::pin(provider::master_unflagged(cluster))
    }
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(provider::server_version(endpoint))
    }
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            let target = RedisTarget::Sentinel {
                sentinels: info.sentinel_endpoints.clone(),
                master_name: provider::MASTER_NAME.to_string(),
                address_map: info
                    .address_map
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            };
            Ok(AnyRecipe::new(
                RedisRecipe::connect(target, config, deadline).await?,
            ))
        })
    }
    fn clock_access(&self, endpoint: String) -> ClockAccess {
        ClockAccess::Redis { endpoint }
    }
}
