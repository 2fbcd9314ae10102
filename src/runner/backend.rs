//! Where a run's clients come from: real clusters in Docker (what `lockbench run` uses), or an
//! in-memory lock so the runner, checkers and exporters are tested end to end without Docker.

use crate::sync::LockUnpoisoned;
use std::future::Future;

use anyhow::Context;

use super::RunFolder;
use super::progress::Progress;
use crate::cluster::{Cluster, ClusterOptions};
use crate::recipe::mock::{MockOptions, MockRecipe, MockService};
use crate::recipe::{AnyRecipe, LockError, Recipe, RecipeConfig};
use crate::system::System;

/// Starts what one system's cells run against and connects their clients.
pub trait Backend: Sync {
    /// What `start` brings up for one system's cells (a cluster).
    type Cluster: Send + Sync;
    /// One lock client.
    type Client: Recipe;

    /// Brings up what `system`'s cells need, before its first cell; may record it in `folder`.
    /// Dropping the result must release everything it holds (containers are removed on drop).
    fn start(
        &self,
        system: System,
        run_id: &str,
        folder: &RunFolder,
        progress: &dyn Progress,
    ) -> impl Future<Output = anyhow::Result<Self::Cluster>>;

    /// Connects one client with `config`.
    fn connect(
        &self,
        cluster: &Self::Cluster,
        config: RecipeConfig,
    ) -> impl Future<Output = Result<Self::Client, LockError>> + Send;

    /// Takes down what `start` brought up, after the system's last cell.
    fn stop(
        &self,
        cluster: Self::Cluster,
        progress: &dyn Progress,
    ) -> impl Future<Output = anyhow::Result<()>>;
}

/// Real clusters in Docker, one per system, built from the local images.
pub struct DockerBackend;

impl Backend for DockerBackend {
    type Cluster = Cluster;
    type Client = AnyRecipe;

    async fn start(
        &self,
        system: System,
        run_id: &str,
        folder: &RunFolder,
        progress: &dyn Progress,
    ) -> anyhow::Result<Cluster> {
        crate::image::ensure(&[system.image_kind()], &|l| progress.line(l)).await?;
        progress.line(&format!("starting {system} cluster"));
        let cluster = Cluster::start_with_run_id(system, ClusterOptions::default(), run_id)
            .await
            .with_context(|| format!("starting the {system} cluster"))?;
        progress.line(&format!(
            "{system} ready in {:.1} s",
            cluster.start_duration().as_secs_f64()
        ));
        folder.write_cluster(&cluster.info().await)?;
        Ok(cluster)
    }

    async fn connect(
        &self,
        cluster: &Cluster,
        config: RecipeConfig,
    ) -> Result<AnyRecipe, LockError> {
        AnyRecipe::connect(cluster, config).await
    }

    async fn stop(&self, cluster: Cluster, progress: &dyn Progress) -> anyhow::Result<()> {
        let system = cluster.system();
        let removed = cluster.teardown().await?;
        progress.line(&format!(
            "{system} removed ({} containers)",
            removed.containers.len()
        ));
        Ok(())
    }
}

/// An in-memory lock service per system (see [`crate::recipe::mock`]); never a real server's
/// stand-in in a recipe or chaos test, only the runner's, checkers' and exporters' driver.
pub struct MockBackend {
    /// How every system's mock service behaves.
    pub options: MockOptions,
    /// The service of the system started last, so a test can read what it planted.
    pub last: std::sync::Mutex<Option<MockService>>,
}

impl MockBackend {
    /// A backend whose services behave as `options` says.
    pub fn new(options: MockOptions) -> MockBackend {
        MockBackend {
            options,
            last: std::sync::Mutex::new(None),
        }
    }

    /// Overlapping grants planted by the last service started (unsafe mode).
    pub fn planted(&self) -> u64 {
        self.last.locked().as_ref().map_or(0, MockService::planted)
    }
}

impl Backend for MockBackend {
    type Cluster = MockService;
    type Client = MockRecipe;

    async fn start(
        &self,
        _system: System,
        _run_id: &str,
        _folder: &RunFolder,
        _progress: &dyn Progress,
    ) -> anyhow::Result<MockService> {
        let service = MockService::new(self.options.clone());
        *self.last.locked() = Some(service.clone());
        Ok(service)
    }

    async fn connect(
        &self,
        service: &MockService,
        _config: RecipeConfig,
    ) -> Result<MockRecipe, LockError> {
        Ok(service.client())
    }

    async fn stop(&self, _service: MockService, _progress: &dyn Progress) -> anyhow::Result<()> {
        Ok(())
    }
}
