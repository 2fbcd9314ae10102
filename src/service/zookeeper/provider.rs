//! ZooKeeper ensemble: servers `zk1..zkN` with `myid` and the server list generated; ready when
//! exactly one node reports `Mode: leader` to `srvr` (or `standalone` for a single node).

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cluster::{
    Cluster, ClusterError, Node, NodeRole, NodeSpec, NodeState, PROBE_TIMEOUT, container_hostname,
};

pub(crate) const CLIENT_PORT: u16 = 2181;

pub(crate) fn node_specs(run_id: &str, size: usize) -> Vec<NodeSpec> {
    let servers: Vec<String> = (1..=size)
        .map(|i| format!("{i}={}", container_hostname(run_id, &format!("zk{i}"))))
        .collect();
    (1..=size)
        .map(|i| NodeSpec {
            name: format!("zk{i}"),
            role: NodeRole::Server,
            port: CLIENT_PORT,
            tls_port: None,
            env: vec![
                ("ZK_MYID".into(), i.to_string()),
                ("ZK_SERVERS".into(), servers.join(",")),
            ],
        })
        .collect()
}

/// Sends a four-letter word to `endpoint` and returns the reply.
pub async fn four_letter_word(endpoint: &str, word: &str) -> Result<String, String> {
    let run = async {
        let mut s = tokio::net::TcpStream::connect(endpoint)
            .await
            .map_err(|e| e.to_string())?;
        s.write_all(word.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut out = String::new();
        s.read_to_string(&mut out)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(out)
    };
    tokio::time::timeout(PROBE_TIMEOUT, run)
        .await
        .map_err(|_| format!("no answer to {word} within {PROBE_TIMEOUT:?}"))?
}

/// The `Mode:` line of a `srvr` reply (`leader`, `follower`, `standalone`, ...).
pub(crate) fn parse_mode(srvr: &str) -> Option<String> {
    srvr.lines()
        .find_map(|l| l.strip_prefix("Mode:"))
        .map(|m| m.trim().to_string())
}

async fn modes(cluster: &Cluster) -> Vec<(String, Result<String, String>)> {
    let mut out = Vec::new();
    for n in cluster.servers() {
        if n.state() != NodeState::Running {
            continue;
        }
        let mode = four_letter_word(&n.endpoint(), "srvr")
            .await
            .and_then(|r| parse_mode(&r).ok_or_else(|| format!("no Mode in reply: {r:?}")));
        out.push((n.name().to_string(), mode));
    }
    out
}

pub(crate) async fn ready(cluster: &Cluster) -> Result<(), String> {
    let modes = modes(cluster).await;
    let expected = cluster.servers().count();
    let answered = modes.iter().filter(|(_, m)| m.is_ok()).count();
    let leaders: Vec<&String> = modes
        .iter()
        .filter(|(_, m)| matches!(m.as_deref(), Ok("leader") | Ok("standalone")))
        .map(|(n, _)| n)
        .collect();
    if answered == expected && leaders.len() == 1 {
        Ok(())
    } else {
        Err(format!("zookeeper modes: {modes:?}"))
    }
}

pub(crate) async fn leader(cluster: &Cluster) -> Result<Option<String>, ClusterError> {
    let leaders: Vec<String> = modes(cluster)
        .await
        .into_iter()
        .filter(|(_, m)| matches!(m.as_deref(), Ok("leader") | Ok("standalone")))
        .map(|(n, _)| n)
        .collect();
    Ok(if leaders.len() == 1 {
        leaders.into_iter().next()
    } else {
        None
    })
}

/// A restarted server serves once it has found its leader (or runs alone).
pub(super) async fn serving(node: &Node) -> Result<(), String> {
    let reply = four_letter_word(&node.endpoint(), "srvr").await?;
    match parse_mode(&reply).as_deref() {
        Some("leader" | "follower" | "standalone" | "observer") => Ok(()),
        Some(m) => Err(format!("srvr says Mode: {m}")),
        None => Err(format!("srvr gave no mode: {:?}", reply.trim())),
    }
}

/// `Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on ...` → `3.8.0`.
pub(super) fn version(srvr: &str) -> Option<String> {
    let v = srvr
        .lines()
        .find_map(|l| l.strip_prefix("Zookeeper version:"))?
        .trim();
    let v = v.split([',', ' ']).next()?;
    // Release builds append the commit after a dash: the version is what comes before it.
    let v = v.split_once('-').map_or(v, |(release, _)| release);
    (!v.is_empty()).then(|| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mode_from_srvr() {
        let reply = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(parse_mode(reply).as_deref(), Some("follower"));
        assert_eq!(
            parse_mode("This ZooKeeper instance is not currently serving requests\n"),
            None
        );
    }

    #[test]
    fn reads_the_version_from_srvr() {
        assert_eq!(
            version(
                "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on 2022-02-25 08:49 UTC\nMode: leader\n"
            )
            .as_deref(),
            Some("3.8.0")
        );
        assert_eq!(
            version("Zookeeper version: 3.8.0\n").as_deref(),
            Some("3.8.0")
        );
        assert_eq!(version("Mode: leader\n"), None);
    }

    #[test]
    fn server_list_names_every_node() {
        let specs = node_specs("r1", 3);
        assert_eq!(specs.len(), 3);
        let servers = &specs[0].env[1].1;
        assert_eq!(servers, "1=lb-r1-zk1,2=lb-r1-zk2,3=lb-r1-zk3");
        assert_eq!(specs[2].env[0].1, "3");
    }
}
