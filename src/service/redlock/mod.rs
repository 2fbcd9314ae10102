//! Redlock: independent Redis masters `redlock1..N` on the Redis image (provider in
//! `provider.rs`), locked by quorum through `recipe.rs`, which runs the scripts and connections
//! of the Redis recipe (`service/redis/recipe/`). No node leads; keys expire by wall clock, so
//! a clock fault shortens their TTLs.

mod provider;
pub mod recipe;

use std::time::Instant;

use self::recipe::{RedlockOptions, RedlockRecipe};
use super::{LockService, TargetOps};
use crate::cluster::{
    BoxFuture, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec, Provider,
};
use crate::recipe::{AnyRecipe, LockError, RecipeConfig};
use crate::system::System;

/// Redlock behind [`Provider`] and [`LockService`].
pub(super) struct Redlock;

/// This folder's entry in [`super::SERVICES`].
pub(super) static SERVICE: &dyn LockService = &Redlock;

impl Provider for Redlock {
    fn system(&self) -> System {
        System::Redlock
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
}

impl LockService for Redlock {
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
    fn target_ops(&self) -> Option<TargetOps> {
        Some(super::redis::keys::REDLOCK_OPS)
    }
    fn floor(&self) -> Option<super::FloorProbe> {
        Some(super::redis::floor::PROBE)
    }
}
