//! MariaDB 10.11 with GTID replication: one primary and read-only replicas (provider in
//! `provider.rs`), locked with `GET_LOCK` (recipe in `recipe.rs`). There is no failover: an
//! operator promotes a replica ([`Provider::promote`], the `promote` fault), and since session
//! locks are neither replicated nor recovered, every lock held on the old primary is free on
//! the new one at once.

pub(super) mod provider;
pub mod recipe;

use std::time::Instant;

use super::LockService;
use crate::cluster::{
    BoxFuture, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec, Provider,
};
use crate::recipe::{AnyRecipe, LockError, RecipeConfig};
use crate::system::System;
use recipe::MariadbRecipe;

/// MariaDB replication behind [`Provider`] and [`LockService`].
pub(super) struct Mariadb;

/// This folder's entry in [`super::SERVICES`].
pub(super) static SERVICE: &dyn LockService = &Mariadb;

impl Provider for Mariadb {
    fn system(&self) -> System {
        System::Mariadb
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
        Box::pin(provider::server_version(endpoint))
    }
    fn promote<'a>(
        &'a self,
        cluster: &'a Cluster,
    ) -> Option<BoxFuture<'a, Result<String, ClusterError>>> {
        Some(Box::pin(provider::promote(cluster)))
    }
}

impl LockService for Mariadb {
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            Ok(AnyRecipe::new(
                MariadbRecipe::connect(info.endpoints.clone(), config, deadline).await?,
            ))
        })
    }
}
