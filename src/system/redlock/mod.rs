//! Redlock: independent Redis masters `redlock1..N` on the Redis image (provider in
//! `cluster/redlock.rs`), locked by quorum through `recipe/redis/redlock.rs`. No node leads;
//! keys expire by wall clock, so a clock fault shortens their TTLs.

mod provider;

use std::time::Instant;

use super::{BoxFuture, Facts, ImageKind, LockService, System};
use crate::cluster::{Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec};
use crate::fault::ClockAccess;
use crate::recipe::{AnyRecipe, LockError, RecipeConfig, RedlockOptions, RedlockRecipe, Strategy};

impl System {
    /// Independent Redis masters used together through the Redlock algorithm.
    #[allow(non_upper_case_globals)]
    pub const Redlock: System = System::named("redlock");
}

static FACTS: Facts = Facts {
    system: System::Redlock,
    name: "redlock",
    aliases: &[],
    default_size: 5,
    sizes: &[1, 3, 5, 7, 9],
    sizes_text: "odd numbers 1 to 9",
    image: ImageKind::Redis,
    strategies: &[Strategy::Herd, Strategy::Predecessor],
    leaderless: true,
    colour: (204, 121, 167),
};

/// Redlock behind [`LockService`].
pub(super) struct Redlock;

impl LockService for Redlock {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }
    fn node_specs(&self, _run_id: &str, size: usize, opts: &ClusterOptions) -> Vec<NodeSpec> {
        provider::node_specs(size, opts.redis.persistence)
    }
    fn ready<'a>(&'a self, cluster: &'a Cluster) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(provider::ready(cluster))
    }
    fn leader<'a>(
        &'a self,
        _cluster: &'a Cluster,
    ) -> BoxFuture<'a, Result<Option<String>, ClusterError>> {
        Box::pin(async { Ok(None) })
    }
    fn serving<'a>(
        &'a self,
        _cluster: &'a Cluster,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(super::redis::provider::answers(node))
    }
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(super::redis::provider::server_version(endpoint))
    }
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            let r = RedlockRecipe::connect(
                &info.endpoints,
                config,
                RedlockOptions::default(),
                deadline,
            )
            .await?;
            Ok(AnyRecipe::new(r))
        })
    }
    fn clock_access(&self, endpoint: String) -> ClockAccess {
        ClockAccess::Redis { endpoint }
    }
}
