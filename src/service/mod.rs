//! What each lock service *does*: its cluster provider ([`crate::cluster::Provider`]: node
//! shapes, readiness, leader, per-node health, version probe, a wiped node's rejoin), its lock
//! recipe (`recipe.rs` or `recipe/`) and how its recipe client connects
//! ([`LockService::connect`]). One folder per system, `service/<name>/`, listed once, by its
//! line in [`crate::system::registry`]. The folder's `facts.rs` (its name, sizes, strategies,
//! image: data) is compiled into [`crate::system`], below everything, so the clusters, the
//! shared recipe code, fault kinds and files name a system without reaching this module; the
//! rest of the folder is compiled here, above the clusters and what every recipe shares
//! ([`crate::recipe`]).
//!
//! Adding a system: a folder `service/<name>/` with its `facts.rs`, its provider, its recipe
//! (`recipe.rs`, or `recipe/` for several files) and a [`LockService`] as `SERVICE` in its
//! `mod.rs`, plus one line in [`crate::system::registry`]. No other file.

/// Declares each system's service module (`service/<name>/`, its facts file left to
/// [`crate::system`]) and [`SERVICES`].
macro_rules! service_modules {
    ($($name:ident: $facts:literal),+ $(,)?) => {
        $(pub mod $name;)+

        /// Every system's service, in report order (the order of [`crate::system::SYSTEMS`]).
        pub static SERVICES: &[&dyn LockService] = &[$($name::SERVICE),+];
    };
}
crate::system::registry::each_system!(service_modules);

mod floor;

pub use self::redis::provider::MASTER_NAME as REDIS_MASTER_NAME;

use std::time::{Duration, Instant};

use crate::cluster::{BoxFuture, Cluster, ConnectInfo, Provider};
use crate::recipe::{AnyRecipe, CONNECT_TIMEOUT, Credentials, LockError, RecipeConfig};
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

    /// How a run on a target lists and removes what this system's recipes wrote under a
    /// prefix, and asks a server its version with the target's login; `None` when this
    /// system's keys cannot be listed (a target of it is refused).
    fn target_ops(&self) -> Option<TargetOps> {
        None
    }

    /// The handoff floor's probe ([`crate::results::floor`]); `None` for a system without one.
    fn floor(&self) -> Option<FloorProbe> {
        None
    }

    /// Lists the leases alive on the cluster, where its server can (etcd's `LeaseLeases`): a
    /// library cell counts those its clients left alive. `None` for a system whose server
    /// cannot list them.
    fn live_leases(&self) -> Option<LiveLeases> {
        None
    }
}

/// The ids of the leases alive on the cluster `info` describes, with a deadline
/// ([`LockService::live_leases`]).
pub type LiveLeases = for<'a> fn(&'a ConnectInfo) -> BoxFuture<'a, Result<Vec<i64>, String>>;

/// A system's handoff floor probe ([`LockService::floor`]).
#[derive(Clone, Copy)]
pub struct FloorProbe {
    /// What one sample measures, step by step.
    pub chain: &'static str,
    /// Runs the probe on the cluster `info` describes: `samples` handoffs by the protocol's
    /// fewest steps, made under the prefix given (left empty at the end), every request with
    /// a deadline.
    pub run: for<'a> fn(
        &'a ConnectInfo,
        &'a str,
        usize,
    ) -> BoxFuture<'a, Result<crate::results::floor::FloorSamples, String>>,
}

/// Up to `limit` keys (or nodes) under `prefix` on the cluster `info` describes, logged in
/// with `login`. The caller puts the deadline on it.
pub type ListKeys = for<'a> fn(
    &'a ConnectInfo,
    Option<&'a Credentials>,
    &'a str,
    usize,
) -> BoxFuture<'a, Result<Vec<String>, String>>;

/// Removes every key (or node) under `prefix`, and `prefix` itself where it is a node of its
/// own (ZooKeeper): how many went. The caller puts the deadline on it.
pub type RemoveKeys = for<'a> fn(
    &'a ConnectInfo,
    Option<&'a Credentials>,
    &'a str,
) -> BoxFuture<'a, Result<u64, String>>;

/// The version the server at an endpoint reports, logged in with the login given, with a
/// deadline.
pub type VersionAs =
    for<'a> fn(&'a str, Option<&'a Credentials>) -> BoxFuture<'a, Result<String, String>>;

/// Whether the server at an endpoint leads its cluster now (ZooKeeper's leader, etcd's, the
/// Redis master), asked with the login given and a deadline.
pub type Leads =
    for<'a> fn(&'a str, Option<&'a Credentials>) -> BoxFuture<'a, Result<bool, String>>;

/// What a run on a target needs of a system beyond connecting ([`LockService::target_ops`]).
#[derive(Clone, Copy)]
pub struct TargetOps {
    /// Lists what is under a prefix (to refuse one that holds keys the run did not write).
    pub list: ListKeys,
    /// Removes what is under a prefix (what the run wrote, at its end).
    pub remove: RemoveKeys,
    /// The version probe with the target's login; `None` where [`Provider::server_version`]
    /// needs none (ZooKeeper's `srvr`, etcd's status call).
    pub version: Option<VersionAs>,
    /// Whether a server leads, for faults on the leader; `None` for a system without one
    /// (Redlock: such faults hit the first node).
    pub leads: Option<Leads>,
}

/// How long a target's key listing or removal ([`TargetOps`]) asks again through the errors a
/// failover, an election or a lost session gives, inside the runner's own 60 s deadline: a run
/// whose faults just killed or paused a leader or master lists and cleans up after it instead
/// of failing on its first answer (seen in CI: `tests/target.rs`, "leader changed" on the next
/// run's listing after a pause).
pub(crate) const KEYS_RETRY_FOR: Duration = Duration::from_secs(30);

/// What a listing's or removal's error adds after `tries` tries: how many, and that `errors`
/// (what the system's retryable errors come from) were asked again; nothing after one.
pub(crate) fn tries_note(tries: u32, errors: &str) -> String {
    match tries {
        1 => String::new(),
        n => format!(" ({n} tries: {errors} are asked again for up to {KEYS_RETRY_FOR:?})"),
    }
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
