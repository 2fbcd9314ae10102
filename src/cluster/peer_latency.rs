//! Latency between the servers of a cluster (`peer_latency`), without `netem`: each server's
//! container starts [`crate::latency::transparent`]'s relay (this `lockbench` executable,
//! bind-mounted read-only) before its server, and an iptables `REDIRECT` in the nat table's
//! OUTPUT chain sends it every TCP connection the container opens to another address of the
//! cluster's network. Replication, elections, Raft and Sentinel's probes all cross it; the
//! clients' connections (which come in from the gateway) do not.
//!
//! The relay's own connections leave from the container's address to the peer's, so the
//! partition rules ([`super::partition`], filter table, by address) cut them as they cut a
//! direct connection. A restarted container runs the same start-up again: a fresh network
//! namespace gets its relay and its redirect before its server starts.

use std::path::{Path, PathBuf};

use testcontainers::bollard::Docker;
use testcontainers::core::{AccessMode, Mount};

use super::ClusterError;
use super::partition::PICK_IPTABLES;
use crate::docker::with_deadline;
use crate::latency::Delay;
use crate::latency::transparent::MARK;

/// The port on 127.0.0.1 inside each container that the redirect sends peer connections to.
const RELAY_PORT: u16 = 15999;
/// Where the executable is mounted inside each container.
const RELAY_EXE: &str = "/opt/lockbench/lockbench";
/// What the relay creates once it listens.
const READY: &str = "/run/lockbench-peer-relay.ready";

/// Latency between the servers of a cluster: the one-way delay each way of every connection
/// between two nodes, and the `lockbench` executable whose `peer-relay` adds it (the images'
/// Debian must be able to run it: the same glibc or newer than the one it was built against).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerLatency {
    /// Added once each way on every connection between nodes.
    pub delay: Delay,
    /// The `lockbench` executable to mount into the containers.
    pub relay_exe: PathBuf,
}

/// How a node's container starts when its peers are behind relays: a shell that starts the
/// relay, adds the redirect and then runs the image's own entrypoint.
#[derive(Debug, Clone)]
pub(crate) struct Wrapper {
    /// The `bash -c` script.
    pub script: String,
    /// The executable, mounted read-only.
    pub mount: Mount,
}

impl Wrapper {
    /// The start-up for `latency` on a network whose subnet is `subnet` (`172.18.0.0/16`).
    pub(crate) fn new(latency: &PeerLatency, subnet: &str) -> Result<Wrapper, ClusterError> {
        let exe = latency
            .relay_exe
            .canonicalize()
            .map_err(|e| bad_exe(&latency.relay_exe, e))?;
        if !exe.is_file() {
            return Err(bad_exe(&exe, "not a file"));
        }
        let Some(host_path) = exe.to_str() else {
            return Err(bad_exe(&exe, "its path is not UTF-8"));
        };
        Ok(Wrapper {
            script: start_script(latency.delay, subnet),
            mount: Mount::bind_mount(host_path, RELAY_EXE).with_access_mode(AccessMode::ReadOnly),
        })
    }
}

fn bad_exe(exe: &Path, why: impl std::fmt::Display) -> ClusterError {
    ClusterError::Start {
        node: "-".into(),
        error: format!(
            "peer_latency runs this lockbench executable inside the server containers, but {} \
             cannot be used: {why}",
            exe.display()
        ),
    }
}

/// The container's start-up: relay first (waiting until it listens, at most 10 s), then the
/// redirect (peer connections made before it would bypass the relay), then the server.
fn start_script(delay: Delay, subnet: &str) -> String {
    let us = |d: std::time::Duration| d.as_micros();
    format!(
        r#"set -eu
rm -f {READY}
{RELAY_EXE} peer-relay --port {RELAY_PORT} --latency {base}us --jitter {jitter}us --ready {READY} &
for _ in $(seq 1 200); do [ -f {READY} ] && break; sleep 0.05; done
if [ ! -f {READY} ]; then
  echo "lockbench-peer-relay: the relay ({RELAY_EXE}, the host's lockbench) did not start within 10 s; it must run on this image's Debian" >&2
  exit 1
fi
{PICK_IPTABLES}$IPT -w -t nat -N LB_PEERS 2>/dev/null || $IPT -w -t nat -F LB_PEERS
$IPT -w -t nat -A LB_PEERS -m addrtype --dst-type LOCAL -j RETURN
$IPT -w -t nat -A LB_PEERS -m mark --mark {MARK:#x} -j RETURN
$IPT -w -t nat -A LB_PEERS -p tcp -d {subnet} -j REDIRECT --to-ports {RELAY_PORT}
$IPT -w -t nat -C OUTPUT -j LB_PEERS 2>/dev/null || $IPT -w -t nat -A OUTPUT -j LB_PEERS
echo "lockbench-peer-relay: {base}us (+{jitter}us) each way to {subnet}"
exec /usr/local/bin/lockbench-entrypoint
"#,
        base = us(delay.base),
        jitter = us(delay.jitter),
    )
}

/// The IPv4 subnet of `network`, which the redirect covers.
pub(crate) async fn subnet(docker: &Docker, network: &str) -> Result<String, ClusterError> {
    let found = with_deadline(docker.inspect_network(network, None)).await?;
    found
        .ipam
        .and_then(|ipam| ipam.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.subnet)
        .find(|s| s.contains('.'))
        .ok_or_else(|| ClusterError::Start {
            node: "-".into(),
            error: format!("network {network} has no IPv4 subnet to add peer latency on"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_start_up_starts_the_relay_before_the_redirect_and_the_redirect_before_the_server() {
        let s = start_script(
            Delay {
                base: Duration::from_micros(1500),
                jitter: Duration::from_micros(250),
            },
            "172.18.0.0/16",
        );
        let at = |what: &str| {
            s.find(what)
                .unwrap_or_else(|| panic!("{what} missing in {s}"))
        };
        assert!(s.contains("--latency 1500us --jitter 250us"));
        assert!(at("peer-relay") < at("REDIRECT"));
        assert!(at("REDIRECT") < at("exec /usr/local/bin/lockbench-entrypoint"));
        // The relay's own connections (marked) and local ones are not redirected again.
        assert!(at("--mark 0x1b -j RETURN") < at("REDIRECT"));
        assert!(at("--dst-type LOCAL -j RETURN") < at("REDIRECT"));
        assert!(s.contains("-p tcp -d 172.18.0.0/16 -j REDIRECT --to-ports 15999"));
    }

    #[test]
    fn a_missing_executable_is_refused_with_its_path() {
        let l = PeerLatency {
            delay: Delay::default(),
            relay_exe: PathBuf::from("/nonexistent/lockbench"),
        };
        let e = Wrapper::new(&l, "172.18.0.0/16").unwrap_err().to_string();
        assert!(e.contains("/nonexistent/lockbench"), "{e}");
        assert!(e.contains("peer_latency"), "{e}");
    }
}
