//! What each lock service *does*: its cluster provider ([`crate::cluster::Provider`]: node
//! shapes, readiness, leader, per-node health, version probe, a wiped node's rejoin) and how its
//! recipe client connects ([`LockService::connect`]). One folder per system, `service/<name>/`,
//! listed once, by its line in [`crate::system::registry`]. The folder's `facts.rs` (its name,
//! sizes, strategies, image: data) is compiled into [`crate::system`], below everything, so the
//! clusters, recipes, fault kinds and files name a system without reaching this module; the
//! rest of the folder is compiled here, above the clusters and the recipes it connects.
//!
//! Adding a system: a folder `service/<name>/` with its `facts.rs`, its provider and a
//! [`LockService`] as `SERVICE` in its `mod.rs` (its recipe may live in the folder too), plus one
//! line in [`crate::system::registry`]. No other file.

/// Declares each system's service module (`service/<name>/`, its facts file left to
/// [`crate::system`]) and [`SERVICES`].
macro_rules! service_modules {
    ($($name:ident: $facts:literal),+ $(,)?) => {
        $(mod $name;)+

        /// Every system's service, in report order (the order of [`crate::system::SYSTEMS`]).
        pub static SERVICES: &[&dyn LockService] = &[$($name::SERVICE),+];
    };
}
crate::system::registry::each_system!(service_modules);

pub use self::redis::provider::MASTER_NAME as REDIS_MASTER_NAME;

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

/// `system`'s entry in [`SERVICES`] (a cluster starts with it as its provider:
/// `Cluster::start(service::of(system), opts)`).
pub fn of(system: System) -> &'static dyn LockService {
    SERVICES
        .iter()
        .copied()
        .find(|s| s.system() == system)
        .expect("system::registry declares every system's facts and service from one line")
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
        let services: Vec<_> = super::SERVICES.iter().map(|s| s.system()).collect();
        assert_eq!(services, ALL_SYSTEMS.to_vec());
        for s in ALL_SYSTEMS {
            assert_eq!(super::of(s).system(), s);
        }
    }
}
