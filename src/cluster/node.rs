//! One server container: how it is started (testcontainers, its own network, a host port on
//! 127.0.0.1 only, NET_ADMIN for iptables) and the per-node fault primitives.

use std::sync::Mutex;
use std::time::Duration;

use testcontainers::bollard::Docker;
use testcontainers::bollard::query_parameters::{
    InspectContainerOptions, KillContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use testcontainers::core::{CmdWaitFor, ExecCommand, IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

use super::ClusterError;
use crate::docker::{self, NODE_LABEL, RUN_LABEL, with_deadline};

/// What a node does in its cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    /// A server that holds data and serves lock requests.
    Server,
    /// A Redis Sentinel: monitors the servers and promotes a replica on failure.
    Sentinel,
}

/// Whether a node is up, killed or frozen, as the fault primitives left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    Running,
    Killed,
    Paused,
}

/// What to do with a node's data directory when it is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataOnRestart {
    /// Keep it, as a crashed server finds its disk again.
    #[default]
    Keep,
    /// Empty it first, as a replaced machine (or a Redis without persistence) would be.
    Wipe,
}

/// How to start one node, as a system's [`super::Provider::node_specs`] says.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// The short name (`zk1`, `redis2`, `sentinel1`).
    pub name: String,
    /// A server or a watcher beside the servers.
    pub role: NodeRole,
    /// The client port inside the container.
    pub port: u16,
    /// The environment the image's entrypoint reads.
    pub env: Vec<(String, String)>,
    /// The TLS client port inside the container, published beside `port` (a cluster started
    /// with TLS); `None` without.
    pub tls_port: Option<u16>,
}

/// A running (or killed, or paused) server container of a cluster.
pub struct Node {
    pub(crate) name: String,
    pub(crate) role: NodeRole,
    pub(crate) hostname: String,
    pub(crate) port: u16,
    pub(crate) host_port: u16,
    pub(crate) tls_host_port: Option<u16>,
    pub(crate) state: Mutex<NodeState>,
    /// Set when a heal could not reach the node because it was paused; applied on resume.
    pub(crate) heal_pending: Mutex<bool>,
    pub(crate) container: ContainerAsync<GenericImage>,
}

/// A node as shown to users (`lockbench up`) and stored with results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NodeInfo {
    pub name: String,
    pub role: NodeRole,
    pub state: NodeState,
    pub container_id: String,
    pub hostname: String,
    pub network_ip: Option<String>,
    pub endpoint: String,
    /// `127.0.0.1:<port>` of its TLS client port, when it serves one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_endpoint: Option<String>,
}

const START_TIMEOUT: Duration = Duration::from_secs(90);
const EXEC_TIMEOUT: Duration = Duration::from_secs(20);

/// The host-side container name (also its DNS name on the cluster network).
pub(crate) fn container_hostname(run_id: &str, node: &str) -> String {
    format!("lb-{run_id}-{node}")
}

pub(crate) async fn start(
    image: &str,
    run_id: &str,
    network: &str,
    spec: NodeSpec,
    wrapper: Option<&super::peer_latency::Wrapper>,
) -> Result<Node, ClusterError> {
    let (repo, tag) = crate::image::ImageRef {
        name: image.to_string(),
        overridden: false,
    }
    .repo_and_tag();
    let hostname = container_hostname(run_id, &spec.name);
    let mut last_err = None;
    // The free port is probed, then bound by the engine: retry if another process took it.
    for _ in 0..3 {
        let free_port = || {
            docker::free_local_port().map_err(|e| ClusterError::Start {
                node: spec.name.clone(),
                error: format!("no free port on 127.0.0.1: {e}"),
            })
        };
        let host_port = free_port()?;
        let tls_host_port = spec.tls_port.map(|_| free_port()).transpose()?;
        let mut image = GenericImage::new(repo.clone(), tag.clone())
            .with_wait_for(WaitFor::message_on_stdout("lockbench-entrypoint: starting"));
        if wrapper.is_some() {
            image = image.with_entrypoint("/bin/bash");
        }
        let mut req = image
            .with_network(network)
            .with_container_name(hostname.clone())
            .with_hostname(hostname.clone())
            .with_label(RUN_LABEL, run_id)
            .with_label(NODE_LABEL, spec.name.clone())
            .with_cap_add("NET_ADMIN")
            .with_mapped_port(host_port, spec.port.tcp())
            .with_startup_timeout(START_TIMEOUT)
            .with_host_config_modifier(|hc| {
                // Publish on loopback only: nothing outside this machine may reach the servers.
                if let Some(bindings) = hc.port_bindings.as_mut() {
                    for list in bindings.values_mut().flatten() {
                        for b in list.iter_mut() {
                            b.host_ip = Some("127.0.0.1".to_string());
                        }
                    }
                }
            });
        for (k, v) in &spec.env {
            req = req.with_env_var(k.clone(), v.clone());
        }
        if let Some(w) = wrapper {
            // The image's own entrypoint runs at the end of the wrapper's script.
            req = req
                .with_cmd(["-c", w.script.as_str()])
                .with_mount(w.mount.clone());
        }
        if let (Some(inside), Some(host)) = (spec.tls_port, tls_host_port) {
            req = req.with_mapped_port(host, inside.tcp());
        }
        match req.start().await {
            Ok(container) => {
                return Ok(Node {
                    name: spec.name,
                    role: spec.role,
                    hostname,
                    port: spec.port,
                    host_port,
                    tls_host_port,
                    state: Mutex::new(NodeState::Running),
                    heal_pending: Mutex::new(false),
                    container,
                });
            }
            Err(e) => {
                let msg = e.to_string();
                let retry = msg.contains("port is already allocated")
                    || msg.contains("address already in use");
                last_err = Some(msg);
                if !retry {
                    break;
                }
                // A failed start may leave a created container behind under our name (and, for
                // an image that declares one, its data volume: `v`).
                if let Ok(d) = docker::connect().await {
                    let _ = d
                        .remove_container(
                            &hostname,
                            Some(testcontainers::bollard::query_parameters::RemoveContainerOptionsBuilder::new().force(true).v(true).build()),
                        )
                        .await;
                }
            }
        }
    }
    Err(ClusterError::Start {
        node: spec.name,
        error: last_err.unwrap_or_default(),
    })
}

impl Node {
    /// The short name (`zk1`, `etcd2`, `sentinel1`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What the node does.
    pub fn role(&self) -> NodeRole {
        self.role
    }
    /// Its DNS name on the cluster network.
    pub fn hostname(&self) -> &str {
        &self.hostname
    }
    /// `127.0.0.1:<port>`: where clients on this machine reach the node's client port.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.host_port)
    }
    /// `127.0.0.1:<port>` of its TLS client port, when it serves one.
    pub fn tls_endpoint(&self) -> Option<String> {
        self.tls_host_port.map(|p| format!("127.0.0.1:{p}"))
    }
    /// The port inside the container that the endpoint leads to.
    pub fn container_port(&self) -> u16 {
        self.port
    }
    /// The container id.
    pub fn container_id(&self) -> &str {
        self.container.id()
    }
    /// Up, killed or paused, as the fault primitives left it.
    pub fn state(&self) -> NodeState {
        *self.state.lock().expect("node state lock")
    }
    pub(crate) fn set_state(&self, s: NodeState) {
        *self.state.lock().expect("node state lock") = s;
    }

    /// The node's current address on the cluster network (it can change across a restart).
    pub async fn network_ip(
        &self,
        docker: &Docker,
        network: &str,
    ) -> Result<Option<String>, ClusterError> {
        self.network_address(docker, network, |n| n.ip_address)
            .await
    }

    /// The gateway of `network` as this node sees it: where traffic from the host's published
    /// ports comes from.
    pub async fn network_gateway(
        &self,
        docker: &Docker,
        network: &str,
    ) -> Result<Option<String>, ClusterError> {
        self.network_address(docker, network, |n| n.gateway).await
    }

    /// One address of this node's settings on `network` (inspected now), if set.
    async fn network_address(
        &self,
        docker: &Docker,
        network: &str,
        field: impl FnOnce(testcontainers::bollard::models::EndpointSettings) -> Option<String>,
    ) -> Result<Option<String>, ClusterError> {
        let info = with_deadline(
            docker.inspect_container(self.container.id(), None::<InspectContainerOptions>),
        )
        .await?;
        Ok(info
            .network_settings
            .and_then(|n| n.networks)
            .and_then(|mut m| m.remove(network))
            .and_then(field)
            .filter(|ip| !ip.is_empty()))
    }

    pub(crate) async fn info(&self, docker: &Docker, network: &str) -> NodeInfo {
        NodeInfo {
            name: self.name.clone(),
            role: self.role,
            state: self.state(),
            container_id: self.container.id().to_string(),
            hostname: self.hostname.clone(),
            network_ip: self.network_ip(docker, network).await.ok().flatten(),
            endpoint: self.endpoint(),
            tls_endpoint: self.tls_endpoint(),
        }
    }

    /// SIGKILL: the process dies at once, with no chance to hand anything over.
    pub(crate) async fn kill(&self, docker: &Docker) -> Result<(), ClusterError> {
        if self.state() == NodeState::Paused {
            self.resume_container().await?;
        }
        let opts = KillContainerOptionsBuilder::new().signal("SIGKILL").build();
        with_deadline(docker.kill_container(self.container.id(), Some(opts))).await?;
        // Wait until the engine reports it stopped, so a restart cannot race the kill.
        for _ in 0..100 {
            if !self.container.is_running().await.unwrap_or(false) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.set_state(NodeState::Killed);
        // A killed process has no rules left to heal: its namespace's rules are rebuilt by
        // whatever partition is in effect when it restarts.
        *self.heal_pending.lock().expect("heal lock") = false;
        Ok(())
    }

    /// Starts a killed node again; with [`DataOnRestart::Wipe`] its data directory is emptied.
    /// A running node is left as it is (an undo may be repeated); a paused one is an error.
    pub(crate) async fn restart(
        &self,
        docker: &Docker,
        data: DataOnRestart,
    ) -> Result<(), ClusterError> {
        match self.state() {
            NodeState::Killed => {}
            // Already up (its kill failed, or this undo runs twice): nothing to restart.
            NodeState::Running => return Ok(()),
            NodeState::Paused => {
                return Err(ClusterError::BadState {
                    node: self.name.clone(),
                    state: self.state(),
                    wanted: "killed",
                });
            }
        }
        if data == DataOnRestart::Wipe {
            // The entrypoint empties /data when it finds this marker.
            self.upload_to_data(docker, wipe_marker_tar()).await?;
        }
        self.start_container().await
    }

    /// Starts a killed etcd member that was removed and added again: its data directory is
    /// emptied but its `member` directory left in place, so the entrypoint starts it with
    /// `--initial-cluster-state existing` and it joins the running cluster as the added member.
    /// The image's entrypoint is not changed for this: the engine's archive upload replaces a
    /// directory with a file (dropping what it held) and the file with a directory again.
    pub(crate) async fn restart_etcd_joining(&self, docker: &Docker) -> Result<(), ClusterError> {
        self.expect_state(NodeState::Killed, "killed")?;
        self.upload_to_data(docker, empty_etcd_member_tar()).await?;
        self.start_container().await
    }

    async fn upload_to_data(&self, docker: &Docker, tar: Vec<u8>) -> Result<(), ClusterError> {
        let opts = UploadToContainerOptionsBuilder::new().path("/data").build();
        with_deadline(docker.upload_to_container(
            self.container.id(),
            Some(opts),
            testcontainers::bollard::body_full(tar.into()),
        ))
        .await?;
        Ok(())
    }

    async fn start_container(&self) -> Result<(), ClusterError> {
        tokio::time::timeout(START_TIMEOUT, self.container.start())
            .await
            .map_err(|_| ClusterError::Timeout {
                what: format!("restart of {}", self.name),
                after: START_TIMEOUT,
            })?
            .map_err(|e| ClusterError::Start {
                node: self.name.clone(),
                error: e.to_string(),
            })?;
        self.set_state(NodeState::Running);
        Ok(())
    }

    /// Freezes every process of the node (docker pause): it keeps its sockets but answers nothing.
    pub(crate) async fn pause(&self) -> Result<(), ClusterError> {
        self.expect_state(NodeState::Running, "running")?;
        let mut tries = 0;
        loop {
            tries += 1;
            let paused = tokio::time::timeout(EXEC_TIMEOUT, self.container.pause())
                .await
                .map_err(|_| ClusterError::Timeout {
                    what: format!("pause of {}", self.name),
                    after: EXEC_TIMEOUT,
                })?;
            match paused {
                Ok(()) => break,
                // The cgroup freezer gives up when a task does not stop in time, which a busy
                // machine makes likely, and runc thaws the container again: try anew.
                Err(e) if tries < FREEZE_TRIES && freeze_gave_up(&e.to_string()) => {
                    tokio::time::sleep(Duration::from_millis(200) * tries).await;
                }
                Err(e) => {
                    return Err(ClusterError::Fault {
                        node: self.name.clone(),
                        error: format!("{e} ({tries} tries)"),
                    });
                }
            }
        }
        self.set_state(NodeState::Paused);
        Ok(())
    }

    /// Thaws a paused node, applying a heal that arrived while it was frozen.
    /// A running node is left as it is (an undo may be repeated); a killed one is an error.
    pub(crate) async fn resume(&self) -> Result<(), ClusterError> {
        if self.state() == NodeState::Running {
            return Ok(());
        }
        self.expect_state(NodeState::Paused, "paused")?;
        self.resume_container().await?;
        let pending = std::mem::take(&mut *self.heal_pending.lock().expect("heal lock"));
        if pending {
            self.exec_script(super::partition::HEAL_SCRIPT).await?;
        }
        Ok(())
    }

    async fn resume_container(&self) -> Result<(), ClusterError> {
        tokio::time::timeout(EXEC_TIMEOUT, self.container.unpause())
            .await
            .map_err(|_| ClusterError::Timeout {
                what: format!("resume of {}", self.name),
                after: EXEC_TIMEOUT,
            })?
            .map_err(|e| ClusterError::Fault {
                node: self.name.clone(),
                error: e.to_string(),
            })?;
        self.set_state(NodeState::Running);
        Ok(())
    }

    fn expect_state(&self, want: NodeState, wanted: &'static str) -> Result<(), ClusterError> {
        let state = self.state();
        if state == want {
            Ok(())
        } else {
            Err(ClusterError::BadState {
                node: self.name.clone(),
                state,
                wanted,
            })
        }
    }

    /// Runs a bash script inside the node and returns its stdout; a non-zero exit is an error.
    pub async fn exec_script(&self, script: &str) -> Result<String, ClusterError> {
        let cmd =
            ExecCommand::new(["bash", "-c", script]).with_cmd_ready_condition(CmdWaitFor::exit());
        let run = async {
            let mut res = self.container.exec(cmd).await?;
            let out = res.stdout_to_vec().await?;
            let err = res.stderr_to_vec().await?;
            let code = res.exit_code().await?;
            Ok::<_, testcontainers::TestcontainersError>((code, out, err))
        };
        let (code, out, err) = tokio::time::timeout(EXEC_TIMEOUT, run)
            .await
            .map_err(|_| ClusterError::Timeout {
                what: format!("exec in {}", self.name),
                after: EXEC_TIMEOUT,
            })?
            .map_err(|e| ClusterError::Fault {
                node: self.name.clone(),
                error: e.to_string(),
            })?;
        if code.unwrap_or(0) != 0 {
            return Err(ClusterError::Fault {
                node: self.name.clone(),
                error: format!(
                    "script exited with {code:?}: {}{}",
                    String::from_utf8_lossy(&out),
                    String::from_utf8_lossy(&err)
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out).to_string())
    }

    /// Everything the node printed so far (stdout, then stderr).
    pub async fn logs(&self) -> Result<String, ClusterError> {
        let run = async {
            let out = self.container.stdout_to_vec().await?;
            let err = self.container.stderr_to_vec().await?;
            Ok::<_, testcontainers::TestcontainersError>((out, err))
        };
        let (out, err) = tokio::time::timeout(EXEC_TIMEOUT, run)
            .await
            .map_err(|_| ClusterError::Timeout {
                what: format!("logs of {}", self.name),
                after: EXEC_TIMEOUT,
            })?
            .map_err(|e| ClusterError::Fault {
                node: self.name.clone(),
                error: e.to_string(),
            })?;
        let mut s = String::from_utf8_lossy(&out).to_string();
        s.push_str(&String::from_utf8_lossy(&err));
        Ok(s)
    }
}

/// A tar archive holding one empty file, `.lockbench-wipe`.
fn wipe_marker_tar() -> Vec<u8> {
    tar_of(&[(".lockbench-wipe", b'0')])
}

/// `etcd/member` as an empty file, then as an empty directory: unpacked over `/data`, the
/// first entry removes the member's data and the second leaves an empty directory in its place.
fn empty_etcd_member_tar() -> Vec<u8> {
    tar_of(&[("etcd/member", b'0'), ("etcd/member/", b'5')])
}

/// A ustar archive of empty entries, each a name and a type flag (`0` file, `5` directory).
fn tar_of(entries: &[(&str, u8)]) -> Vec<u8> {
    let mut tar = Vec::new();
    for (name, kind) in entries {
        tar.extend_from_slice(&ustar_header(name.as_bytes(), *kind));
    }
    tar.extend_from_slice(&[0u8; 1024]);
    tar
}

fn ustar_header(name: &[u8], kind: u8) -> [u8; 512] {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name);
    header[100..107].copy_from_slice(if kind == b'5' { b"0000755" } else { b"0000644" });
    header[108..115].copy_from_slice(b"0000000");
    header[116..123].copy_from_slice(b"0000000");
    header[124..135].copy_from_slice(b"00000000000");
    header[136..147].copy_from_slice(b"00000000000");
    header[156] = kind;
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| b as u32).sum();
    let chk = format!("{sum:06o}\0 ");
    header[148..156].copy_from_slice(chk.as_bytes());
    header
}

/// How many times a pause is tried when the cgroup freezer gives up.
const FREEZE_TRIES: u32 = 3;

/// True for Docker's answer when runc's freezer did not get every task of the container to stop
/// ("OCI runtime pause failed: unable to freeze"): runc thawed it again, and a later try may
/// freeze it.
fn freeze_gave_up(error: &str) -> bool {
    error.contains("unable to freeze")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The freezer's give-up, as Docker reported it in a test run beside two other binaries, is
    /// tried again; any other failure is not.
    #[test]
    fn only_the_freezers_give_up_is_tried_again() {
        assert!(freeze_gave_up(
            "Docker responded with status code 500: Cannot pause container d709: OCI runtime \
             pause failed: unable to freeze: unknown"
        ));
        assert!(!freeze_gave_up("No such container: d709"));
    }

    #[test]
    fn wipe_marker_is_a_valid_ustar_block() {
        let t = wipe_marker_tar();
        assert_eq!(t.len(), 1536);
        let mut h = t[..512].to_vec();
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        h[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, h.iter().map(|&b| b as u32).sum::<u32>());
        assert!(t.starts_with(b".lockbench-wipe\0"));
        let e = empty_etcd_member_tar();
        assert_eq!(e.len(), 2048);
        assert_eq!((e[156], e[512 + 156]), (b'0', b'5'));
        assert!(e[512..].starts_with(b"etcd/member/\0"));
    }
}
