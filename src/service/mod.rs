//! What each lock service *does*: its cluster provider ([`crate::cluster::Provider`]: node
//! shapes, readiness, leader, per-node health, version probe, a wiped node's rejoin) and how its
//! recipe client connects ([`LockService::connect`]). One folder per system, listed once in
//! [`registry::SERVICES`]; the system's name and facts are data in [`crate::system`], below
//! everything, so the clusters, recipes, fault kinds and files name a system without reaching
//! this module. It sits above the clusters and the recipes it connects.
//!
//! Adding a system: besides its facts (`system/<name>.rs`), a folder `service/<name>/` with its
//! provider and a [`LockService`], plus one line in [`registry::SERVICES`]; a system may keep
//! its recipe in the folder too.

mod etcd;
mod redis;
mod redlock;
pub mod registry;
mod zookeeper;

pub use redis::provider::MASTER_NAME as REDIS_MASTER_NAME;

use std::time::Instant;

use crate::cluster::{BoxFuture, Cluster, ConnectInfo, Provider};
use crate::recipe::{AnyRecipe, CONNECT_TIMEOUT, LockError, RecipeConfig};
use crate::system::System;

/// One lock service: how to start, probe and connect to it.
///
/// Contract: as [`Provider`]'s; `connect` ends by its deadline.
pub trait LockService: Provider {
    /// Connects one lock client to the cluster `info` describes, by `deadline`.
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>>;
}

/// `system`'s entry in [`registry::SERVICES`] (a cluster starts with it as its provider:
/// `Cluster::start(service::of(system), opts)`).
pub fn of(system: System) -> &'static dyn LockService {
    registry::SERVICES
        .iter()
        .copied()
        .find(|s| s.system() == system)
        .expect("every system in system::registry::SYSTEMS has a service in service::registry::SERVICES")
}

/// Connects one client to `cluster` (Redis: through its Sentinels, with the cluster's host
/// names mapped to the endpoints this machine can reach).
pub async fn connect(cluster: &Cluster, config: RecipeConfig) -> Result<AnyRecipe, LockError> {
    connect_to(&cluster.connect_info(), config).await
}

/// [`connect`] from a cluster's description, as a worker process gets it.
pub async fn connect_to(
    cluster: &ConnectInfo,
    config: RecipeConfig,
) -> Result<AnyRecipe, LockError> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    crate::recipe::inject::connecting(&config.prefix);
    of(cluster.system).connect(cluster, config, deadline).await
}

#[cfg(test)]
mod tests {
    use crate::system::ALL_SYSTEMS;

    #[test]
    fn every_system_has_one_service_in_report_order() {
        let services: Vec<_> = super::registry::SERVICES
            .iter()
            .map(|s| s.system())
            .collect();
        assert_eq!(services, ALL_SYSTEMS.to_vec());
        for s in ALL_SYSTEMS {
            assert_eq!(super::of(s).system(), s);
        }
    }
}
