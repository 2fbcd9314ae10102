//! Where a run's clients come from: real clusters in Docker (what `lockbench run` uses), or an
//! in-memory lock so the runner, checkers and exporters are tested end to end without Docker.

use std::future::Future;
use std::path::PathBuf;

use anyhow::Context;

use super::RunFolder;
use super::progress::Progress;
use crate::cluster::{Cluster, ClusterOptions, ConnectInfo};
use crate::fault::Faultable;
use crate::recipe::mock::{MockOptions, MockRecipe, MockService};
use crate::recipe::{AnyRecipe, Credentials, LockError, Recipe, RecipeConfig};
use crate::results::floor::HandoffFloor;
use crate::sync::LockUnpoisoned;
use crate::system::System;
use crate::system::settings::SettingsRecord;

use super::worker::WorkerTarget;

/// The cluster a group of cells runs on ([`crate::plan::ClusterGroup`] without its cells).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterShape {
    /// Its system.
    pub system: System,
    /// The server version to start; `None` for the system's default (or where the backend
    /// starts no server).
    pub version: Option<crate::system::Version>,
    /// Its server nodes.
    pub size: usize,
    /// The one-way delay between its nodes (`peer_latency`); zero for direct connections.
    pub peer_latency: crate::latency::Delay,
}

impl ClusterShape {
    /// The shape of `group`'s cluster.
    pub fn of(group: &crate::plan::ClusterGroup<'_>) -> ClusterShape {
        ClusterShape {
            system: group.system,
            version: group.version,
            size: group.size,
            peer_latency: group.peer_latency,
        }
    }

    /// Refuses a delay between nodes on a backend (`what`) that cannot add one.
    pub fn refuse_peer_latency(&self, what: &str) -> anyhow::Result<()> {
        if self.peer_latency.is_zero() {
            return Ok(());
        }
        anyhow::bail!(
            "peer_latency (or --peer-latency) adds delay between the servers of clusters \
             lockbench starts in Docker; {what}: remove peer_latency from the workload or \
             --peer-latency from the command"
        )
    }
}

/// Starts what one system's cells run against and connects their clients.
pub trait Backend: Sync {
    /// What `start` brings up for one system's cells (a cluster), which the nemesis faults.
    type Cluster: Send + Sync + Faultable;
    /// One lock client.
    type Client: Recipe;

    /// Brings up what the cells of one cluster need (`shape`: their system, its server nodes,
    /// the delay between them), before the first of them; may record it in `folder`.
    /// Dropping the result must release everything it holds (containers are removed on drop).
    /// A backend that cannot add `shape.peer_latency` refuses it.
    fn start(
        &self,
        shape: ClusterShape,
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

    /// Ends what `start` brought up when the run stops early (Ctrl-C, an error in a cell):
    /// removes what it can, says what it could not, and never fails. By default the cluster is
    /// dropped (containers are removed on drop).
    fn abandon(&self, cluster: Self::Cluster) -> impl Future<Output = ()> {
        drop(cluster);
        async {}
    }

    /// The addresses clients dial to reach `cluster` (endpoints, Sentinels, Sentinel's address
    /// map), which latency relays stand in front of (`client_latency`); `None` where the
    /// clients do not go over the network (none by default).
    fn connect_info(&self, cluster: &Self::Cluster) -> Option<ConnectInfo> {
        let _ = cluster;
        None
    }

    /// Connects one client with `config` to `cluster` at the addresses `via` gives (its
    /// [`Backend::connect_info`] rewritten to relays). Only called where `connect_info` gave
    /// `Some`; by default refused.
    fn connect_via(
        &self,
        cluster: &Self::Cluster,
        via: &ConnectInfo,
        config: RecipeConfig,
    ) -> impl Future<Output = Result<Self::Client, LockError>> + Send {
        let _ = (cluster, via, config);
        async {
            Err(LockError::Connection(
                "this backend's clients do not go over the network, so they cannot be                  connected through relays"
                    .into(),
            ))
        }
    }

    /// The root of every cell's key prefix (`<root>/<run id>/<cell>`) on `cluster`:
    /// `/lockbench` on the clusters lockbench starts.
    fn key_root(&self, cluster: &Self::Cluster) -> String {
        let _ = cluster;
        "/lockbench".to_string()
    }

    /// The login clients of `cluster` use, if it asks for one (none by default).
    fn credentials(&self, cluster: &Self::Cluster) -> Option<Credentials> {
        let _ = cluster;
        None
    }

    /// What `environment.json` records of the clusters beyond the engine (a target's
    /// [`crate::target::Target::record`], never a secret); nothing by default.
    fn record(&self) -> Option<serde_json::Value> {
        None
    }

    /// The handoff floor of `cluster` ([`crate::results::floor`]) from `samples` handoffs,
    /// measured before its cells with keys under `prefix` (removed again): `None` where this
    /// backend measures none (the default), `Some(Err)` saying why a probe failed.
    fn floor(
        &self,
        cluster: &Self::Cluster,
        prefix: &str,
        samples: usize,
    ) -> impl Future<Output = Option<Result<HandoffFloor, String>>> + Send {
        let _ = (cluster, prefix, samples);
        async { None }
    }

    /// The version `cluster`'s servers report (`3.5.16`), or `unknown (why)`; recorded in each
    /// of its cells. `None` where nothing can be asked (the default: the in-memory mock).
    fn server_version(
        &self,
        cluster: &Self::Cluster,
    ) -> impl Future<Output = Option<String>> + Send {
        let _ = cluster;
        async { None }
    }

    /// The server settings `cluster` started with that differ from the packages' defaults;
    /// recorded in each of its cells. `None` where lockbench started no server (the default:
    /// the mock; a target).
    fn server_settings(&self, cluster: &Self::Cluster) -> Option<SettingsRecord> {
        let _ = cluster;
        None
    }

    /// What runs the clusters, for the run's `environment.json`: its version, or why it is
    /// not known. The default says there is no engine (the clusters live in this process).
    fn engine(&self) -> impl Future<Output = String> + Send {
        async { "none (in-memory clusters, no Docker)".to_string() }
    }

    /// Where worker processes come from and how their clients reach `cluster`, for cells
    /// whose clients run as processes. The default refuses: such a backend's clients cannot
    /// leave this process.
    fn worker_target(&self, cluster: &Self::Cluster) -> anyhow::Result<WorkerTarget> {
        let _ = cluster;
        anyhow::bail!(
            "clients_as = \"processes\" needs real clusters: this backend's lock lives inside \
             the runner's process, so its clients cannot run in worker processes; use \
             clients_as = \"tasks\""
        )
    }
}

/// The `lockbench` executable worker processes run: `given`, or this program itself.
pub(super) fn worker_exe(given: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(exe) => Ok(exe.clone()),
        None => std::env::current_exe()
            .context("finding this program's path, to start worker processes from it"),
    }
}

/// Real clusters in Docker, one per system, built from the local images.
#[derive(Debug, Clone, Default)]
pub struct DockerBackend {
    /// The `lockbench` executable worker processes run; `None` for this program itself
    /// (a test binary names `env!("CARGO_BIN_EXE_lockbench")` here).
    pub worker_exe: Option<PathBuf>,
    /// Start every server with its package's defaults (`--server-defaults`; see
    /// [`ClusterOptions::server_defaults`]).
    pub server_defaults: bool,
}

impl Backend for DockerBackend {
    type Cluster = Cluster;
    type Client = AnyRecipe;

    async fn start(
        &self,
        shape: ClusterShape,
        run_id: &str,
        folder: &RunFolder,
        progress: &dyn Progress,
    ) -> anyhow::Result<Cluster> {
        let (system, size) = (shape.system, shape.size);
        let version = shape.version.unwrap_or_else(|| system.default_version());
        crate::image::ensure(&[version], &|l| progress.line(l)).await?;
        let mut label = format!("{system}@{version}");
        if self.server_defaults {
            label.push_str(" (its package's defaults)");
        }
        let peer_latency = if shape.peer_latency.is_zero() {
            progress.line(&format!("starting {label} cluster of {size}"));
            None
        } else {
            let d = shape.peer_latency;
            let jitter = if d.jitter.is_zero() {
                String::new()
            } else {
                format!(" (+ up to {})", crate::plan::latency_label(d.jitter))
            };
            progress.line(&format!(
                "starting {label} cluster of {size}, {}{jitter} each way between its nodes",
                crate::plan::latency_label(d.base),
            ));
            Some(crate::cluster::PeerLatency {
                delay: shape.peer_latency,
                relay_exe: worker_exe(self.worker_exe.as_ref())?,
            })
        };
        let options = ClusterOptions {
            size: Some(size),
            peer_latency,
            version: Some(version),
            server_defaults: self.server_defaults,
            ..ClusterOptions::default()
        };
        let cluster = Cluster::start_with_run_id(crate::service::of(system), options, run_id)
            .await
            .with_context(|| format!("starting the {label} cluster of {size}"))?;
        progress.line(&format!(
            "{label} ready in {:.1} s",
            cluster.start_duration().as_secs_f64()
        ));
        folder.write_cluster(&cluster.info().await, size)?;
        Ok(cluster)
    }

    async fn engine(&self) -> String {
        crate::docker::engine_version().await
    }

    async fn server_version(&self, cluster: &Cluster) -> Option<String> {
        Some(cluster.server_version().await)
    }

    fn server_settings(&self, cluster: &Cluster) -> Option<SettingsRecord> {
        Some(cluster.settings())
    }

    async fn floor(
        &self,
        cluster: &Cluster,
        prefix: &str,
        samples: usize,
    ) -> Option<Result<HandoffFloor, String>> {
        let info = cluster.connect_info();
        let probe = crate::service::of(cluster.system()).floor()?;
        Some(
            (probe.run)(&info, prefix, samples)
                .await
                .and_then(|samples| {
                    HandoffFloor::of(&samples, probe.chain)
                        .ok_or_else(|| format!("no sample completed ({} failed)", samples.failed))
                }),
        )
    }

    async fn connect(
        &self,
        cluster: &Cluster,
        config: RecipeConfig,
    ) -> Result<AnyRecipe, LockError> {
        crate::service::connect(cluster, config).await
    }

    fn worker_target(&self, cluster: &Cluster) -> anyhow::Result<WorkerTarget> {
        Ok(WorkerTarget {
            exe: worker_exe(self.worker_exe.as_ref())?,
            cluster: cluster.connect_info(),
        })
    }

    fn connect_info(&self, cluster: &Cluster) -> Option<ConnectInfo> {
        Some(cluster.connect_info())
    }

    async fn connect_via(
        &self,
        _: &Cluster,
        via: &ConnectInfo,
        config: RecipeConfig,
    ) -> Result<AnyRecipe, LockError> {
        crate::service::connect_to(via, config).await
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
    /// Systems whose start fails, as a cluster that does not come up (a test of what the run
    /// does then).
    pub fail_start: Vec<System>,
}

impl MockBackend {
    /// A backend whose services behave as `options` says.
    pub fn new(options: MockOptions) -> MockBackend {
        MockBackend {
            options,
            last: std::sync::Mutex::new(None),
            fail_start: Vec::new(),
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
        shape: ClusterShape,
        _run_id: &str,
        _folder: &RunFolder,
        _progress: &dyn Progress,
    ) -> anyhow::Result<MockService> {
        shape.refuse_peer_latency("the in-memory mock has no network between servers")?;
        if self.fail_start.contains(&shape.system) {
            anyhow::bail!(
                "the cluster did not become ready within 1s: no leader\nits nodes' last log \
                 lines:\n--- mock1 (last 1 lines)\nSLF4J: planted start-up failure"
            );
        }
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

/// The mock's pretend servers as the nemesis acts on them: `mock1`..`mock3`, `mock1` leading
/// while it is up. Here, not beside the mock, so the recipes import no fault kind.
impl Faultable for MockService {
    fn servers(&self) -> Vec<String> {
        MockService::servers(self)
    }
    async fn leader(&self) -> Result<Option<String>, crate::cluster::ClusterError> {
        Ok(MockService::leader(self))
    }
    async fn kill(&self, node: &str) -> Result<(), crate::cluster::ClusterError> {
        self.fault(format!("kill {node}"), |f| {
            f.killed.insert(node.to_string());
        });
        Ok(())
    }
    async fn restart(
        &self,
        node: &str,
        _data: crate::cluster::DataOnRestart,
    ) -> Result<(), crate::cluster::ClusterError> {
        self.fault(format!("restart {node}"), |f| {
            f.killed.remove(node);
        });
        Ok(())
    }
    async fn pause(&self, node: &str) -> Result<(), crate::cluster::ClusterError> {
        self.fault(format!("pause {node}"), |f| {
            f.paused.insert(node.to_string());
        });
        Ok(())
    }
    async fn resume(&self, node: &str) -> Result<(), crate::cluster::ClusterError> {
        self.fault(format!("resume {node}"), |f| {
            f.paused.remove(node);
        });
        Ok(())
    }
    async fn partition(
        &self,
        grudge: &crate::fault::Grudge,
    ) -> Result<(), crate::cluster::ClusterError> {
        self.fault(format!("partition {}", grudge.nodes().join(",")), |f| {
            f.partitioned = true
        });
        Ok(())
    }
    async fn heal(&self) -> Result<(), crate::cluster::ClusterError> {
        self.fault("heal".into(), |f| f.partitioned = false);
        Ok(())
    }
    fn clock(
        &self,
        _node: &str,
    ) -> Result<crate::fault::ClockAccess, crate::cluster::ClusterError> {
        Ok(crate::fault::ClockAccess::Monotonic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_without_a_network_between_servers_refuses_peer_latency_and_says_how_to_go_on() {
        let mut shape = ClusterShape {
            system: System::Etcd,
            version: None,
            size: 3,
            peer_latency: crate::latency::Delay::default(),
        };
        assert!(shape.refuse_peer_latency("the mock").is_ok());
        shape.peer_latency.base = std::time::Duration::from_millis(1);
        let e = shape
            .refuse_peer_latency("the mock")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the mock") && e.contains("--peer-latency"),
            "{e}"
        );
        let out =
            std::env::temp_dir().join(format!("lockbench-peer-refusal-{}", std::process::id()));
        let started = tokio::runtime::Runtime::new().unwrap().block_on(async {
            let folder = RunFolder::create(Some(&out), "peer").unwrap();
            MockBackend::new(MockOptions::default())
                .start(shape, "r", &folder, &super::super::progress::PlainProgress)
                .await
                .map(|_| ())
        });
        let _ = std::fs::remove_dir_all(&out);
        let e = started.unwrap_err().to_string();
        assert!(e.contains("in-memory mock has no network"), "{e}");
    }
}
