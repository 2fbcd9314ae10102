//! PostgreSQL 15 with streaming replication (provider in `provider.rs`, image in
//! `docker/postgres/`), locked with session advisory locks through the recipe in `recipe.rs`
//! over one session per client (`session.rs`). It has no failover of its own: the `promote`
//! fault promotes a replica with `pg_promote()`, and advisory locks, which are not replicated,
//! are all free on the promoted server at once.

pub(super) mod provider;
pub(crate) mod recipe;
mod session;

use std::time::Instant;

use super::LockService;
use crate::cluster::Provider;
use crate::cluster::{
    BoxFuture, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec,
};
use crate::recipe::{AnyRecipe, LockError, RecipeConfig};
use crate::system::System;

/// PostgreSQL behind [`Provider`] and [`LockService`].
pub(super) struct Postgres;

/// This folder's entry in [`super::SERVICES`].
pub(super) static SERVICE: &dyn LockService = &Postgres;

impl Provider for Postgres {
    fn system(&self) -> System {
        System::Postgres
    }
    fn node_specs(&self, run_id: &str, size: usize, _: &ClusterOptions) -> Vec<NodeSpec> {
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
    fn serving<'a>(&'a self, _: &'a Cluster, node: &'a Node) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(provider::serving(node))
    }
    fn server_version<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(provider::server_version(endpoint))
    }
    fn promote<'a>(
        &'a self,
        cluster: &'a Cluster,
    ) -> Option<BoxFuture<'a, Result<String, ClusterError>>> {
        Some(Box::pin(provider::promote(cluster)))
    }
}

impl LockService for Postgres {
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            let recipe =
                recipe::PostgresRecipe::connect(info.endpoints.clone(), config, deadline).await?;
            Ok(AnyRecipe::new(recipe))
        })
    }
}
