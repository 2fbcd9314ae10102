//! One type over every system's recipe, so the runner can hold clients of any system; connecting
//! one takes what it needs from a started [`Cluster`], or from its [`ConnectInfo`] in a worker
//! process.

use std::time::{Duration, Instant};

use super::etcd::EtcdRecipe;
use super::redis::{RedisRecipe, RedisTarget};
use super::redlock::{RedlockOptions, RedlockRecipe};
use super::zookeeper::ZookeeperRecipe;
use super::{Lease, LockError, Recipe, RecipeConfig, Strategy, Tally};
use crate::cluster::{Cluster, ConnectInfo};
use crate::system::System;

/// How long connecting one client may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A lock client of whichever system the cluster runs.
pub enum AnyRecipe {
    Zookeeper(ZookeeperRecipe),
    /// Boxed: an etcd client carries its gRPC channel state inline, many times the others' size.
    Etcd(Box<EtcdRecipe>),
    Redis(RedisRecipe),
    Redlock(RedlockRecipe),
}

impl AnyRecipe {
    /// Connects one client to `cluster` (Redis: through its Sentinels, with the cluster's host
    /// names mapped to the endpoints this machine can reach).
    pub async fn connect(cluster: &Cluster, config: RecipeConfig) -> Result<AnyRecipe, LockError> {
        AnyRecipe::connect_to(&cluster.connect_info(), config).await
    }

    /// [`AnyRecipe::connect`] from a cluster's description, as a worker process gets it.
    pub async fn connect_to(
        cluster: &ConnectInfo,
        config: RecipeConfig,
    ) -> Result<AnyRecipe, LockError> {
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        super::inject::connecting(&config.prefix);
        Ok(match cluster.system {
            System::Zookeeper => {
                AnyRecipe::Zookeeper(ZookeeperRecipe::connect(&cluster.endpoints, config).await?)
            }
            System::Etcd => AnyRecipe::Etcd(Box::new(
                EtcdRecipe::connect(&cluster.endpoints, config).await?,
            )),
            System::Redis => {
                let target = RedisTarget::Sentinel {
                    sentinels: cluster.sentinel_endpoints.clone(),
                    master_name: crate::cluster::REDIS_MASTER_NAME.to_string(),
                    address_map: cluster
                        .address_map
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                };
                AnyRecipe::Redis(RedisRecipe::connect(target, config, deadline).await?)
            }
            System::Redlock => AnyRecipe::Redlock(
                RedlockRecipe::connect(
                    &cluster.endpoints,
                    config,
                    RedlockOptions::default(),
                    deadline,
                )
                .await?,
            ),
        })
    }
}

impl Recipe for AnyRecipe {
    fn system(&self) -> System {
        match self {
            AnyRecipe::Zookeeper(r) => r.system(),
            AnyRecipe::Etcd(r) => r.system(),
            AnyRecipe::Redis(r) => r.system(),
            AnyRecipe::Redlock(r) => r.system(),
        }
    }

    fn strategies(&self) -> &'static [Strategy] {
        match self {
            AnyRecipe::Zookeeper(r) => r.strategies(),
            AnyRecipe::Etcd(r) => r.strategies(),
            AnyRecipe::Redis(r) => r.strategies(),
            AnyRecipe::Redlock(r) => r.strategies(),
        }
    }

    async fn acquire_counted(
        &self,
        key: &str,
        strategy: Strategy,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        match self {
            AnyRecipe::Zookeeper(r) => r.acquire_counted(key, strategy, deadline, tally).await,
            AnyRecipe::Etcd(r) => r.acquire_counted(key, strategy, deadline, tally).await,
            AnyRecipe::Redis(r) => r.acquire_counted(key, strategy, deadline, tally).await,
            AnyRecipe::Redlock(r) => r.acquire_counted(key, strategy, deadline, tally).await,
        }
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        super::inject::before_release(self.system()).await;
        match self {
            AnyRecipe::Zookeeper(r) => r.release(lease).await,
            AnyRecipe::Etcd(r) => r.release(lease).await,
            AnyRecipe::Redis(r) => r.release(lease).await,
            AnyRecipe::Redlock(r) => r.release(lease).await,
        }
    }

    async fn crash(self) {
        match self {
            AnyRecipe::Zookeeper(r) => r.crash().await,
            AnyRecipe::Etcd(r) => (*r).crash().await,
            AnyRecipe::Redis(r) => r.crash().await,
            AnyRecipe::Redlock(r) => r.crash().await,
        }
    }
}
