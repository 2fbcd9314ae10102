//! Apache ZooKeeper 3.8: an ensemble `zk1..zkN` (provider in `provider.rs`), locked
//! through the sequential-ephemeral recipe in `recipe/`. Sessions run on monotonic
//! time, so a clock fault has nothing to move.

mod floor;
mod keys;
mod provider;

pub use provider::four_letter_word;
pub mod recipe;

use std::time::Instant;

use super::{LockService, TargetOps};
use crate::cluster::{
    self, BoxFuture, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec, Provider,
};
use crate::recipe::{AnyRecipe, LockError, RecipeConfig};
use crate::system::System;

/// ZooKeeper behind [`Provider`] and [`LockService`].
pub(super) struct Zookeeper;

/// This folder's entry in [`super::SERVICES`].
pub(super) static SERVICE: &dyn LockService = &Zookeeper;

impl Provider for Zookeeper {
    fn system(&self) -> System {
        System::Zookeeper
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
        _cluster: &'a Cluster,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(provider::serving(node))
    }
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let reply = provider::four_letter_word(endpoint, "srvr").await?;
            provider::version(&reply).ok_or_else(|| cluster::no_version(&reply))
        })
    }
}

impl LockService for Zookeeper {
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        _deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            Ok(AnyRecipe::new(
                recipe::ZookeeperRecipe::connect(&info.endpoints, config).await?,
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
