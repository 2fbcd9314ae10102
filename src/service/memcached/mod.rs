//! Memcached 1.6: independent servers `memcached1..N` with no replication and no leader
//! (provider in `provider.rs`). A client places each lock on one server by a consistent hash
//! of its key (`ring.rs`), as memcached clients place keys, and locks it with `add` and a TTL
//! over the meta text protocol (`proto.rs`, `recipe.rs`). Nothing is kept on disk: a restarted
//! server has forgotten its locks and fencing counters. TTLs run on the server's monotonic
//! clock, in whole seconds.

mod proto;
mod provider;
mod recipe;
mod ring;

use std::time::Instant;

use super::LockService;
use crate::cluster::{
    BoxFuture, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec, Provider,
};
use crate::recipe::{AnyRecipe, LockError, RecipeConfig};
use crate::system::System;

/// Memcached behind [`Provider`] and [`LockService`].
pub(super) struct Memcached;

/// This folder's entry in [`super::SERVICES`].
pub(super) static SERVICE: &dyn LockService = &Memcached;

impl Provider for Memcached {
    fn system(&self) -> System {
        System::Memcached
    }
    fn node_specs(&self, _run_id: &str, size: usize, _opts: &ClusterOptions) -> Vec<NodeSpec> {
        provider::node_specs(size)
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
        Box::pin(provider::answers(node.endpoint()))
    }
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(provider::server_version(endpoint))
    }
}

impl LockService for Memcached {
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        _deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        // Connections open on first use, so a client connects while a server is down.
        Box::pin(async move {
            Ok(AnyRecipe::new(recipe::MemcachedRecipe::new(
                &info.endpoints,
                config,
            )?))
        })
    }
}
