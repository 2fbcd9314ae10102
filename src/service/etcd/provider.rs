//! etcd cluster: members `etcd1..etcdN`; ready when every member reports the same leader.

use std::collections::BTreeMap;

use etcd_client::{Client, ConnectOptions};

use crate::cluster::{
    Cluster, ClusterError, Node, NodeRole, NodeSpec, NodeState, PROBE_TIMEOUT, container_hostname,
};

pub(crate) const CLIENT_PORT: u16 = 2379;

pub(crate) fn node_specs(run_id: &str, size: usize) -> Vec<NodeSpec> {
    let cluster: Vec<String> = (1..=size)
        .map(|i| {
            let host = container_hostname(run_id, &format!("etcd{i}"));
            format!("{host}=http://{host}:2380")
        })
        .collect();
    (1..=size)
        .map(|i| {
            let name = format!("etcd{i}");
            NodeSpec {
                env: vec![
                    ("LB_ETCD_NAME".into(), container_hostname(run_id, &name)),
                    ("LB_ETCD_CLUSTER".into(), cluster.join(",")),
                ],
                name,
                role: NodeRole::Server,
                port: CLIENT_PORT,
                tls_port: None,
            }
        })
        .collect()
}

/// A client bound to exactly one member (so `status()` asks that member), with deadlines.
pub async fn client_for(endpoint: &str) -> Result<Client, String> {
    let opts = ConnectOptions::new()
        .with_connect_timeout(PROBE_TIMEOUT)
        .with_timeout(PROBE_TIMEOUT);
    tokio::time::timeout(
        PROBE_TIMEOUT,
        Client::connect([format!("http://{endpoint}")], Some(opts)),
    )
    .await
    .map_err(|_| format!("connect to {endpoint} timed out"))?
    .map_err(|e| e.to_string())
}

/// Each running member's view: (node name, Ok((its member id, the leader id it reports))).
async fn views(cluster: &Cluster) -> Vec<(String, Result<(u64, u64), String>)> {
    let mut out = Vec::new();
    for n in cluster.servers() {
        if n.state() != NodeState::Running {
            continue;
        }
        let view = async {
            let mut c = client_for(&n.endpoint()).await?;
            let st = tokio::time::timeout(PROBE_TIMEOUT, c.status())
                .await
                .map_err(|_| "status timed out".to_string())?
                .map_err(|e| e.to_string())?;
            let member = st.header().map(|h| h.member_id()).unwrap_or(0);
            Ok::<_, String>((member, st.leader()))
        }
        .await;
        out.push((n.name().to_string(), view));
    }
    out
}

pub(crate) async fn ready(cluster: &Cluster) -> Result<(), String> {
    let views = views(cluster).await;
    let expected = cluster.servers().count();
    let leaders: Vec<u64> = views
        .iter()
        .filter_map(|(_, v)| v.as_ref().ok().map(|v| v.1))
        .collect();
    if leaders.len() == expected && leaders[0] != 0 && leaders.iter().all(|&l| l == leaders[0]) {
        Ok(())
    } else {
        Err(format!("etcd views (member, leader): {views:?}"))
    }
}

/// The leader most responding members agree on (a majority of the cluster), as a node name.
pub(crate) async fn leader(cluster: &Cluster) -> Result<Option<String>, ClusterError> {
    let views = views(cluster).await;
    let members: BTreeMap<u64, String> = views
        .iter()
        .filter_map(|(n, v)| v.as_ref().ok().map(|v| (v.0, n.clone())))
        .collect();
    let mut votes: BTreeMap<u64, usize> = BTreeMap::new();
    for (_, v) in &views {
        if let Ok((_, l)) = v
            && *l != 0
        {
            *votes.entry(*l).or_default() += 1;
        }
    }
    let majority = cluster.servers().count() / 2 + 1;
    Ok(votes
        .into_iter()
        .find(|&(_, c)| c >= majority)
        .and_then(|(id, _)| members.get(&id).cloned()))
}

/// How long replacing a member may keep being refused: etcd refuses a membership change as
/// "unhealthy cluster" while a just-killed member still counts as connected, and during an
/// election.
const REPLACE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Replaces `node` in the membership through a running member: removes its old entry (if still
/// listed) and adds its peer URL again, so it can join as a new member with no data. Retried
/// until [`REPLACE_TIMEOUT`].
pub(crate) async fn replace_member(cluster: &Cluster, node: &Node) -> Result<(), ClusterError> {
    let started = std::time::Instant::now();
    loop {
        match replace_member_once(cluster, node).await {
            Ok(()) => return Ok(()),
            Err(e) if started.elapsed() >= REPLACE_TIMEOUT => return Err(e),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(500)).await,
        }
    }
}

async fn replace_member_once(cluster: &Cluster, node: &Node) -> Result<(), ClusterError> {
    let peer = format!("http://{}:2380", node.hostname());
    let fault = |error: String| ClusterError::Fault {
        node: node.name().to_string(),
        error: format!("replacing the etcd member: {error}"),
    };
    let mut last = String::from("no other member is running");
    for other in cluster.servers() {
        if other.name() == node.name() || other.state() != NodeState::Running {
            continue;
        }
        let replaced = async {
            let mut c = client_for(&other.endpoint()).await?;
            let deadline = |what: &str| format!("{what} through {} timed out", other.name());
            let list = tokio::time::timeout(PROBE_TIMEOUT, c.member_list())
                .await
                .map_err(|_| deadline("member list"))?
                .map_err(|e| e.to_string())?;
            if let Some(m) = list
                .members()
                .iter()
                .find(|m| m.peer_urls().contains(&peer))
            {
                tokio::time::timeout(PROBE_TIMEOUT, c.member_remove(m.id()))
                    .await
                    .map_err(|_| deadline("member remove"))?
                    .map_err(|e| e.to_string())?;
            }
            tokio::time::timeout(PROBE_TIMEOUT, c.member_add([peer.as_str()], None))
                .await
                .map_err(|_| deadline("member add"))?
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(())
        }
        .await;
        match replaced {
            Ok(()) => return Ok(()),
            Err(e) => last = format!("{}: {e}", other.name()),
        }
    }
    Err(fault(last))
}

/// A status call on one member, with its deadline.
async fn status(endpoint: &str) -> Result<etcd_client::StatusResponse, String> {
    let mut c = client_for(endpoint).await?;
    tokio::time::timeout(PROBE_TIMEOUT, c.status())
        .await
        .map_err(|_| format!("status of {endpoint} timed out"))?
        .map_err(|e| e.to_string())
}

/// Healthy and caught up: it sees a leader, is a voting member, and has applied at least the
/// index the leader reported just before (so it holds every lock granted until then).
pub(super) async fn serving(cluster: &Cluster, node: &Node) -> Result<(), String> {
    let leader = leader(cluster)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no leader that a majority agrees on")?;
    let leader_index = status(&cluster.node(&leader).map_err(|e| e.to_string())?.endpoint())
        .await?
        .raft_index();
    let st = status(&node.endpoint()).await?;
    if st.leader() == 0 {
        return Err("it sees no leader".into());
    }
    if st.is_learner() {
        return Err("it is still a learner".into());
    }
    if st.raft_applied_index() < leader_index {
        return Err(format!(
            "applied index {} behind the leader's {leader_index}",
            st.raft_applied_index()
        ));
    }
    Ok(())
}
