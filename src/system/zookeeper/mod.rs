//! Apache ZooKeeper 3.8: an ensemble `zk1..zkN` (provider in `provider.rs`), locked
//! through the sequential-ephemeral recipe in `recipe/zookeeper/`. Sessions run on monotonic
//! time, so a clock fault has nothing to move.

mod provider;

use std::time::Instant;

use super::{BoxFuture, Facts, ImageKind, LockService, System};
use crate::cluster::{self, Cluster, ClusterError, ClusterOptions, ConnectInfo, Node, NodeSpec};
use crate::fault::ClockAccess;
use crate::recipe::{AnyRecipe, LockError, RecipeConfig, Strategy, ZookeeperRecipe};

impl System {
    /// An Apache ZooKeeper 3.8 ensemble.
    #[allow(non_upper_case_globals)]
    pub const Zookeeper: System = System::named("zookeeper");
}

impl ImageKind {
    /// ZooKeeper from Debian's package.
    #[allow(non_upper_case_globals)]
    pub const Zookeeper: ImageKind = ImageKind::new(
        "zookeeper",
        "3.8",
        include_str!("../../../docker/zookeeper/Dockerfile"),
        include_str!("../../../docker/zookeeper/entrypoint.sh"),
    );
}

static FACTS: Facts = Facts {
    system: System::Zookeeper,
    name: "zookeeper",
    aliases: &["zk"],
    default_size: 3,
    sizes: &[1, 3, 4, 5],
    sizes_text: "1, 3, 4 (to show the even split), 5",
    image: ImageKind::Zookeeper,
    strategies: &[Strategy::Herd, Strategy::Predecessor],
    leaderless: false,
    colour: (0, 64, 140),
};

/// ZooKeeper behind [`LockService`].
pub(super) struct Zookeeper;

impl LockService for Zookeeper {
    fn facts(&self) -> &'static Facts {
        &FACTS
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
    fn connect<'a>(
        &'a self,
        info: &'a ConnectInfo,
        config: RecipeConfig,
        _deadline: Instant,
    ) -> BoxFuture<'a, Result<AnyRecipe, LockError>> {
        Box::pin(async move {
            Ok(AnyRecipe::new(
                ZookeeperRecipe::connect(&info.endpoints, config).await?,
            ))
        })
    }
    fn clock_access(&self, _endpoint: String) -> ClockAccess {
        ClockAccess::Monotonic
    }
}
