//! Real clusters on testcontainers: each system's [`Provider`] (in its `crate::service` folder)
//! says which nodes to start and when they are ready; here they run on their own Docker network
//! labelled with the run id, plus the fault primitives
//! the chaos schedules use: kill/restart, pause/resume, partition/heal, and logs.
//!
//! A [`Cluster`] removes its containers and network when torn down or dropped (also on panic,
//! by unwinding); `lockbench clean` removes anything a killed process left behind.

pub mod grudge;
mod health;
mod node;
mod partition;
mod peer_latency;
mod provider;
mod version;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use testcontainers::bollard::Docker;
use testcontainers::bollard::models::NetworkCreateRequest;

pub use grudge::{CLIENTS, Grudge};
pub(crate) use node::container_hostname;
pub use node::{DataOnRestart, Node, NodeInfo, NodeRole, NodeSpec, NodeState};
pub use peer_latency::PeerLatency;
pub use provider::{BoxFuture, Provider};
pub(crate) use version::no_version;

use crate::docker::{self, DockerError, RUN_LABEL, with_deadline};
use crate::system::System;

/// Deadline for one probe of a node (a 4-letter word, a status call, a PING).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How many of each node's last log lines a failed start keeps.
const START_LOG_LINES: usize = 25;

/// Cluster start-up, inspection and fault errors, each saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Docker(#[from] DockerError),
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    #[error(transparent)]
    Version(#[from] crate::system::version::UnknownVersion),
    #[error(transparent)]
    System(#[from] crate::system::SystemError),
    #[error("could not start node {node}: {error}")]
    Start { node: String, error: String },
    #[error("{0} is not offered with TLS here: --tls starts etcd and redis")]
    NoTls(System),
    #[error("{what} did not finish within {after:?}")]
    Timeout { what: String, after: Duration },
    #[error(
        "the cluster did not become ready within {after:?}: {last}. See the node logs (`Cluster::logs`)"
    )]
    NotReady { after: Duration, last: String },
    #[error("{cause}\nits nodes' last log lines:\n{logs}")]
    StartFailed {
        cause: Box<ClusterError>,
        logs: String,
    },
    #[error("no node named '{node}': the nodes are {known}")]
    UnknownNode { node: String, known: String },
    #[error("node {node} is {state:?}, but this needs it {wanted}")]
    BadState {
        node: String,
        state: NodeState,
        wanted: &'static str,
    },
    #[error("bad partition: {0}")]
    BadPartition(String),
    #[error("fault on node {node} failed: {error}")]
    Fault { node: String, error: String },
    #[error("probe of {node} failed: {error}")]
    Probe { node: String, error: String },
}

/// How to start a cluster; `Default` gives each system's standard shape.
#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    /// Number of server nodes (Redis: master plus replicas); `None` for the system's default.
    pub size: Option<usize>,
    /// How long to wait for readiness; `None` for 120 s.
    pub ready_timeout: Option<Duration>,
    /// What only the Redis image's systems (Redis with Sentinel, Redlock) take.
    pub redis: RedisOptions,
    /// Serve TLS beside the plain client port with these certificates (`lockbench up
    /// --tls`): every server also listens on its system's [`Provider::tls_port`], asking
    /// clients for a certificate the bundle's CA signed. etcd and Redis only.
    pub tls: Option<std::sync::Arc<crate::tls::Bundle>>,
    /// Delay every connection between the nodes (`peer_latency`): each container runs a
    /// relay in front of its peers ([`PeerLatency`]); `None` for direct connections.
    pub peer_latency: Option<PeerLatency>,
    /// The server version to run (one of the system's [`System::versions`]); `None` for its
    /// default version.
    pub version: Option<crate::system::Version>,
    /// Start the servers with their packages' defaults (`--server-defaults`): the tuned
    /// settings of the system's table ([`crate::system::settings`]) are not passed, the fixed
    /// ones stay.
    pub server_defaults: bool,
}

/// Options of the systems that run on the Redis image (Redis with Sentinel, Redlock).
#[derive(Debug, Clone, Default)]
pub struct RedisOptions {
    /// Append-only file with fsync always, so a restarted node keeps its keys.
    pub persistence: bool,
}

/// A started cluster of one system.
pub struct Cluster {
    pub(crate) system: System,
    pub(crate) provider: &'static dyn Provider,
    pub(crate) run_id: String,
    pub(crate) network: String,
    pub(crate) nodes: Vec<Node>,
    pub(crate) docker: Docker,
    pub(crate) started_in: Duration,
    /// The partitions in effect (until [`Cluster::heal`]), applied again to a node that
    /// restarts or resumes.
    pub(crate) cuts: std::sync::Mutex<Vec<Grudge>>,
    /// The delay between nodes it was started with, if any.
    peer_latency: Option<crate::latency::Delay>,
    /// Whether its servers started with their packages' defaults ([`ClusterOptions`]).
    server_defaults: bool,
    /// The server version it runs.
    version: crate::system::Version,
    torn_down: bool,
}

/// The cluster as printed by `lockbench up` and stored with results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClusterInfo {
    pub system: System,
    pub run_id: String,
    pub network: String,
    pub endpoints: Vec<String>,
    /// `127.0.0.1:<port>` of every server's TLS client port (a cluster started with TLS).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tls_endpoints: Vec<String>,
    pub sentinel_endpoints: Vec<String>,
    pub leader: Option<String>,
    pub start_seconds: f64,
    pub nodes: Vec<NodeInfo>,
    /// The server version lockbench started (its image's version, `3.5`, `valkey-8.1`).
    pub version: String,
    /// The server version one running node reported, or `unknown (why)`.
    pub server_version: String,
    /// Every server setting that differed from its package's default, and whether the servers
    /// started with the packages' defaults.
    pub server_settings: crate::system::settings::SettingsRecord,
    /// The one-way delay added between every two nodes (`peer_latency`), µs; absent without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_latency_us: Option<u64>,
    /// Up to this much more per chunk (`peer_jitter`), µs; absent without peer latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_jitter_us: Option<u64>,
}

/// What a lock client needs to reach a cluster, also from another process on this machine (a
/// `lockbench worker`): serialisable, unlike the [`Cluster`] that owns the containers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnectInfo {
    /// The system the cluster runs.
    pub system: System,
    /// `127.0.0.1:<port>` of every server's client port.
    pub endpoints: Vec<String>,
    /// `127.0.0.1:<port>` of every Sentinel (Redis only).
    pub sentinel_endpoints: Vec<String>,
    /// Every node's in-network host name (what Sentinel reports as the master) mapped to the
    /// endpoint this machine reaches it at.
    pub address_map: std::collections::BTreeMap<String, String>,
    /// The master's name as the Sentinels know it (Redis only); `None` for the name the
    /// clusters lockbench starts use.
    #[serde(default)]
    pub master_name: Option<String>,
}

/// The TLS client port `provider`'s servers open when started with TLS, or why its system is
/// not offered with TLS (what `lockbench up --tls` checks before making certificates, too).
pub fn tls_port(provider: &dyn Provider) -> Result<u16, ClusterError> {
    provider
        .tls_port()
        .ok_or(ClusterError::NoTls(provider.system()))
}

impl Cluster {
    /// Starts a cluster of `system` and waits until it is ready: ZooKeeper has exactly one leader,
    /// every etcd member reports the same leader, Sentinel names the Redis master, every Redlock
    /// master answers PING. Whatever was started is removed again if this fails. `provider` is
    /// the system's (`crate::service::of(system)`).
    pub async fn start(
        provider: &'static dyn Provider,
        opts: ClusterOptions,
    ) -> Result<Cluster, ClusterError> {
        Self::start_with_run_id(provider, opts, &docker::new_run_id()).await
    }

    /// [`Cluster::start`] under a given run id (the label value every container gets).
    pub async fn start_with_run_id(
        provider: &'static dyn Provider,
        opts: ClusterOptions,
        run_id: &str,
    ) -> Result<Cluster, ClusterError> {
        let started = Instant::now();
        let system = provider.system();
        let size = system.validate_size(opts.size.unwrap_or(system.default_size()))?;
        let version = opts.version.unwrap_or_else(|| system.default_version());
        if version.image() != system.image_kind() {
            return Err(ClusterError::Version(
                crate::system::version::UnknownVersion {
                    system,
                    asked: format!("{version:?}"),
                    valid: system.versions_text(),
                },
            ));
        }
        let image = crate::image::require(version).await?;
        let docker = docker::connect().await?;
        let network = format!("lb-{run_id}-{}", system.name());
        let labels = HashMap::from([(RUN_LABEL.to_string(), run_id.to_string())]);
        with_deadline(docker.create_network(NetworkCreateRequest {
            name: network.clone(),
            driver: Some("bridge".to_string()),
            labels: Some(labels),
            ..Default::default()
        }))
        .await?;
        let mut cluster = Cluster {
            system,
            provider,
            run_id: run_id.to_string(),
            network,
            nodes: Vec::new(),
            docker,
            started_in: Duration::ZERO,
            cuts: std::sync::Mutex::new(Vec::new()),
            peer_latency: opts.peer_latency.as_ref().map(|p| p.delay),
            version,
            server_defaults: opts.server_defaults,
            torn_down: false,
        };
        let wrapper = match &opts.peer_latency {
            Some(latency) => {
                let subnet = peer_latency::subnet(&cluster.docker, &cluster.network).await?;
                Some(peer_latency::Wrapper::new(latency, &subnet)?)
            }
            None => None,
        };
        let mut specs = provider.node_specs(run_id, size, &opts);
        for s in &mut specs {
            let node = match s.role {
                NodeRole::Server => "server",
                NodeRole::Sentinel => "sentinel",
            };
            s.env.extend(crate::system::settings::tuned_env(
                system.facts().settings,
                node,
                opts.server_defaults,
            ));
        }
        if let Some(bundle) = &opts.tls {
            let port = tls_port(provider)?;
            for s in specs.iter_mut().filter(|s| s.role == NodeRole::Server) {
                s.env.extend(bundle.server_env());
                s.tls_port = Some(port);
            }
        }
        // Start in order (a Redis master before its replicas and Sentinels); entrypoints wait for
        // their peers' names to resolve, so the readiness wait below covers the rest.
        for spec in specs {
            let n = node::start(&image, run_id, &cluster.network, spec, wrapper.as_ref()).await?;
            cluster.nodes.push(n);
        }
        let ready = cluster
            .wait_ready(opts.ready_timeout.unwrap_or(Duration::from_secs(120)))
            .await;
        if let Err(cause) = ready {
            // The containers go with the cluster: keep what their servers said first.
            return Err(ClusterError::StartFailed {
                cause: Box::new(cause),
                logs: cluster.log_tails(START_LOG_LINES).await,
            });
        }
        cluster.started_in = started.elapsed();
        Ok(cluster)
    }

    /// The last `lines` lines each node printed, node by node, for an error report.
    pub async fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            let text = match n.logs().await {
                Ok(text) => text,
                Err(e) => format!("(its logs could not be read: {e})"),
            };
            let all: Vec<&str> = text.lines().collect();
            let tail = &all[all.len().saturating_sub(lines)..];
            out.push_str(&format!("--- {} (last {} lines)\n", n.name(), tail.len()));
            for l in tail {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// The server settings it started with that differ from the packages' defaults.
    pub fn settings(&self) -> crate::system::settings::SettingsRecord {
        crate::system::settings::SettingsRecord::of(
            self.system.facts().settings,
            self.server_defaults,
        )
    }

    /// The version a running server reports (`3.5.16`), or `unknown (why)`; never fails.
    pub async fn server_version(&self) -> String {
        version::server_version(self).await
    }

    /// The server version it runs, as lockbench chose it (the server's own answer is
    /// [`Cluster::server_version`]).
    pub fn version(&self) -> crate::system::Version {
        self.version
    }

    /// One check of readiness (as defined for [`Cluster::start`]).
    async fn ready_once(&self) -> Result<(), String> {
        self.provider.ready(self).await
    }

    /// One check that the cluster is healthy: every node (Sentinels included) running, and
    /// the readiness [`Cluster::start`] waits for (every server answers, one leader). `Err`
    /// says what is not.
    pub async fn healthy(&self) -> Result<(), String> {
        health::healthy(self).await
    }

    /// One check that `node` serves its cluster now: a ZooKeeper leader or follower (`srvr`),
    /// an etcd voting member that sees a leader and has applied the leader's index, the Redis
    /// master Sentinel names or a replica whose link is up and that no Sentinel sees down, a
    /// Redlock master that answers PING. `Err` says why not.
    pub async fn serving(&self, node: &str) -> Result<(), String> {
        let n = self.node(node).map_err(|e| e.to_string())?;
        health::serving(self, n).await
    }

    /// Promotes a replica to lead (see [`Provider::promote`]): the node that now leads, or
    /// [`ClusterError::Fault`] when this system has nothing to promote.
    pub async fn promote(&self) -> Result<String, ClusterError> {
        match self.provider.promote(self) {
            Some(promoting) => promoting.await,
            None => Err(ClusterError::Fault {
                node: "-".into(),
                error: format!(
                    "{} has no replica to promote (it fails over by itself, or has no \
                     replicas): the promote fault runs on postgres and mariadb",
                    self.system()
                ),
            }),
        }
    }

    /// Polls readiness (as defined for [`Cluster::start`]) until it holds or `timeout` passes.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<(), ClusterError> {
        let deadline = Instant::now() + timeout;
        loop {
            let res = self.ready_once().await;
            match res {
                Ok(()) => return Ok(()),
                Err(last) if Instant::now() >= deadline => {
                    return Err(ClusterError::NotReady {
                        after: timeout,
                        last,
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// The current leader's node name: the ZooKeeper leader, the etcd leader, the master
    /// Sentinel names; `None` for Redlock (no leader) or when no single leader is seen now.
    pub async fn leader(&self) -> Result<Option<String>, ClusterError> {
        self.provider.leader(self).await
    }

    /// Waits until a leader other than `old` is seen, returning it and how long it took.
    pub async fn wait_new_leader(
        &self,
        old: &str,
        timeout: Duration,
    ) -> Result<(String, Duration), ClusterError> {
        let start = Instant::now();
        loop {
            if let Ok(Some(l)) = self.leader().await
                && l != old
            {
                return Ok((l, start.elapsed()));
            }
            if start.elapsed() >= timeout {
                let view = self.leadership_view().await;
                let why = if view.is_empty() {
                    String::new()
                } else {
                    format!(" ({view})")
                };
                return Err(ClusterError::Timeout {
                    what: format!("election of a leader other than {old}{why}"),
                    after: timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The system this cluster runs.
    pub fn system(&self) -> System {
        self.system
    }
    /// The run id every container and the network are labelled with.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
    /// The Docker network the nodes share.
    pub fn network(&self) -> &str {
        &self.network
    }
    /// How long start-up took, readiness included.
    pub fn start_duration(&self) -> Duration {
        self.started_in
    }
    /// Every node, servers first, in start order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    /// The node with this short name.
    pub fn node(&self, name: &str) -> Result<&Node, ClusterError> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| ClusterError::UnknownNode {
                node: name.to_string(),
                known: self
                    .nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
    /// The server nodes (no Sentinels).
    pub fn servers(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.role == NodeRole::Server)
    }
    /// `127.0.0.1:<port>` of every server's client port.
    pub fn endpoints(&self) -> Vec<String> {
        self.servers().map(|n| n.endpoint()).collect()
    }
    /// `127.0.0.1:<port>` of every Sentinel (Redis only).
    pub fn sentinel_endpoints(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.role == NodeRole::Sentinel)
            .map(|n| n.endpoint())
            .collect()
    }
    /// How a client reaches this cluster, from this process or another on this machine.
    pub fn connect_info(&self) -> ConnectInfo {
        ConnectInfo {
            system: self.system,
            endpoints: self.endpoints(),
            sentinel_endpoints: self.sentinel_endpoints(),
            address_map: self
                .nodes
                .iter()
                .map(|n| (n.hostname().to_string(), n.endpoint()))
                .collect(),
            master_name: None,
        }
    }
    /// Maps a node's in-network host name (as Sentinel or etcd report it) to its node.
    pub fn node_by_hostname(&self, hostname: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.hostname == hostname)
    }

    /// A snapshot for printing and for results.
    pub async fn info(&self) -> ClusterInfo {
        let mut nodes = Vec::new();
        for n in &self.nodes {
            nodes.push(n.info(&self.docker, &self.network).await);
        }
        ClusterInfo {
            system: self.system,
            run_id: self.run_id.clone(),
            network: self.network.clone(),
            endpoints: self.endpoints(),
            tls_endpoints: self.nodes.iter().filter_map(Node::tls_endpoint).collect(),
            sentinel_endpoints: self.sentinel_endpoints(),
            leader: self.leader().await.ok().flatten(),
            start_seconds: self.started_in.as_secs_f64(),
            nodes,
            version: self.version.name().to_string(),
            server_version: version::server_version(self).await,
            server_settings: self.settings(),
            peer_latency_us: self.peer_latency.map(|d| d.base.as_micros() as u64),
            peer_jitter_us: self.peer_latency.map(|d| d.jitter.as_micros() as u64),
        }
    }

    /// Kills a node with SIGKILL.
    pub async fn kill(&self, node: &str) -> Result<(), ClusterError> {
        self.node(node)?.kill(&self.docker).await
    }
    /// Starts a killed node again, keeping or wiping its data directory (a running node is left
    /// as it is).
    ///
    /// An etcd member whose data is wiped cannot come back under its old identity (etcd
    /// refuses to bootstrap a member twice), so it is replaced as etcd's runtime
    /// reconfiguration says: removed and added again through a running member, then started
    /// with an empty data directory and `--initial-cluster-state existing`.
    pub async fn restart(&self, node: &str, data: DataOnRestart) -> Result<(), ClusterError> {
        let n = self.node(node)?;
        if n.state() != NodeState::Killed {
            // Running already (an undo may be repeated), or paused (an error).
            return n.restart(&self.docker, data).await;
        }
        let rejoin = match data {
            DataOnRestart::Wipe => self.provider.rejoin_wiped(self, n),
            DataOnRestart::Keep => None,
        };
        if let Some(rejoin) = rejoin {
            rejoin.await?;
        } else {
            n.restart(&self.docker, data).await?;
        }
        self.restore_cuts().await
    }
    /// Freezes a node (docker pause).
    pub async fn pause(&self, node: &str) -> Result<(), ClusterError> {
        self.node(node)?.pause().await
    }
    /// Thaws a paused node (a running node is left as it is).
    pub async fn resume(&self, node: &str) -> Result<(), ClusterError> {
        let n = self.node(node)?;
        let was_paused = n.state() == NodeState::Paused;
        n.resume().await?;
        if was_paused {
            self.restore_cuts().await?;
        }
        Ok(())
    }
    /// What the system's own failover machinery knows when no leader comes (Redis: each
    /// Sentinel's master, TILT state and last failover events); empty where there is none to ask.
    pub async fn leadership_view(&self) -> String {
        self.provider.leaderless_view(self).await
    }

    /// What the node printed so far.
    pub async fn logs(&self, node: &str) -> Result<String, ClusterError> {
        self.node(node)?.logs().await
    }

    /// Removes every container and the network, and says what it removed.
    pub async fn teardown(mut self) -> Result<docker::Removed, ClusterError> {
        self.torn_down = true;
        let nodes = std::mem::take(&mut self.nodes);
        let mut removed_nodes = Vec::new();
        for n in nodes {
            // `rm` removes the container now; a paused one is thawed first so it can die.
            if n.state() == NodeState::Paused {
                let _ = n.container.unpause().await;
            }
            if n.container.rm().await.is_ok() {
                removed_nodes.push(n.hostname);
            }
        }
        // A removal still in progress makes the engine answer 409 for a moment: retry briefly.
        let mut attempt = 0;
        let mut removed = loop {
            match docker::remove_labelled(&self.docker, Some(&self.run_id)).await {
                Ok(r) => break r,
                Err(e) if attempt >= 10 => return Err(e.into()),
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            }
        };
        removed_nodes.append(&mut removed.containers);
        removed.containers = removed_nodes;
        Ok(removed)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.torn_down {
            return;
        }
        // Removal by label on a thread of its own works with or without a runtime, and also
        // covers containers whose handles testcontainers could not drop cleanly.
        if let Err(e) = docker::remove_labelled_blocking(&self.run_id) {
            eprintln!(
                "lockbench: could not remove cluster {}: {e}. Run `lockbench clean` to remove it.",
                self.run_id
            );
        }
        // The handles now point at removed containers; forget them rather than remove twice.
        for n in std::mem::take(&mut self.nodes) {
            std::mem::forget(n.container);
        }
    }
}
