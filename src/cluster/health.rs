//! Whether one node serves its cluster again after a restart, and whether the whole cluster is
//! healthy before a cell: the checks behind [`Cluster::serving`] and [`Cluster::healthy`].
//!
//! A restarted container is not yet a member doing its job: a ZooKeeper server must have found
//! its leader, an etcd member must see a leader and have applied what the leader had, a Redis
//! server must be the master Sentinel names or a replica whose link is up and which every
//! Sentinel lists as reachable. A Redlock master only has to answer.

use super::node::Node;
use super::{Cluster, NodeRole, NodeState, PROBE_TIMEOUT, etcd, redis, zookeeper};

/// One check of `node`: `Ok` when it serves its cluster now, else why not.
pub(crate) async fn serving(cluster: &Cluster, node: &Node) -> Result<(), String> {
    if node.state() != NodeState::Running {
        return Err(format!("{} is {:?}", node.name(), node.state()));
    }
    cluster.system.service().serving(cluster, node).await
}

pub(crate) async fn zookeeper_serving(node: &Node) -> Result<(), String> {
    let reply = zookeeper::four_letter_word(&node.endpoint(), "srvr").await?;
    match zookeeper::parse_mode(&reply).as_deref() {
        Some("leader" | "follower" | "standalone" | "observer") => Ok(()),
        Some(m) => Err(format!("srvr says Mode: {m}")),
        None => Err(format!("srvr gave no mode: {:?}", reply.trim())),
    }
}

/// A status call on one member, with its deadline.
async fn etcd_status(endpoint: &str) -> Result<etcd_client::StatusResponse, String> {
    let mut c = etcd::client_for(endpoint).await?;
    tokio::time::timeout(PROBE_TIMEOUT, c.status())
        .await
        .map_err(|_| format!("status of {endpoint} timed out"))?
        .map_err(|e| e.to_string())
}

/// Healthy and caught up: it sees a leader, is a voting member, and has applied at least the
/// index the leader reported just before (so it holds every lock granted until then).
pub(crate) async fn etcd_serving(cluster: &Cluster, node: &Node) -> Result<(), String> {
    let leader = etcd::leader(cluster)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no leader that a majority agrees on")?;
    let leader_index = etcd_status(&cluster.node(&leader).map_err(|e| e.to_string())?.endpoint())
        .await?
        .raft_index();
    let st = etcd_status(&node.endpoint()).await?;
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

pub(crate) async fn redis_answers(node: &Node) -> Result<(), String> {
    let v = redis::command(&node.endpoint(), &::redis::cmd("PING")).await?;
    if v == ::redis::Value::SimpleString("PONG".into()) {
        Ok(())
    } else {
        Err(format!("PING answered {v:?}"))
    }
}

/// The master Sentinel names, or a replica with its link up that no Sentinel sees down.
pub(crate) async fn redis_serving(cluster: &Cluster, node: &Node) -> Result<(), String> {
    let mut cmd = ::redis::cmd("INFO");
    cmd.arg("replication");
    let info = redis::command(&node.endpoint(), &cmd).await?;
    let info =
        redis::parse_info(&::redis::from_redis_value_ref::<String>(&info).unwrap_or_default());
    let role = info.get("role").map(String::as_str).unwrap_or_default();
    let master = redis::leader(cluster).await.map_err(|e| e.to_string())?;
    match role {
        // Named, but a restarted master may be named only until the failover its kill started
        // completes: it serves once no Sentinel sees it down and every replica is connected.
        "master" if master.as_deref() == Some(node.name()) => {
            return redis_master_settled(cluster, &info).await;
        }
        "master" => {
            return Err(format!(
                "it runs as a master, but Sentinel names {}",
                master.as_deref().unwrap_or("no master")
            ));
        }
        "slave" if info.get("master_link_status").map(String::as_str) == Some("up") => {}
        _ => {
            return Err(format!(
                "role {role}, master_link_status {}",
                info.get("master_link_status")
                    .map(String::as_str)
                    .unwrap_or("absent")
            ));
        }
    }
    for s in sentinels(cluster) {
        let flags = redis::replica_flags(&s.endpoint(), node.hostname()).await?;
        match flags {
            None => return Err(format!("{} does not list it as a replica", s.name())),
            Some(f) if f.contains("s_down") || f.contains("disconnected") => {
                return Err(format!("{} sees it as {f}", s.name()));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

async fn redis_master_settled(
    cluster: &Cluster,
    info: &std::collections::HashMap<String, String>,
) -> Result<(), String> {
    let replicas = cluster.servers().count() - 1;
    if info.get("connected_slaves") != Some(&replicas.to_string()) {
        return Err(format!(
            "master with {} of {replicas} replicas connected",
            info.get("connected_slaves")
                .map(String::as_str)
                .unwrap_or("no")
        ));
    }
    master_unflagged(cluster).await
}

/// One pass of the health check a cell starts on: every node up and one leader (the readiness
/// [`Cluster::start`] waits for).
pub(crate) async fn healthy(cluster: &Cluster) -> Result<(), String> {
    for n in cluster.nodes() {
        if n.state() != NodeState::Running {
            return Err(format!("{} is {:?}", n.name(), n.state()));
        }
    }
    cluster.ready_once().await?;
    cluster.system.service().settled(cluster).await
}

/// The running Sentinels.
fn sentinels(cluster: &Cluster) -> impl Iterator<Item = &Node> {
    cluster
        .nodes()
        .iter()
        .filter(|n| n.role() == NodeRole::Sentinel && n.state() == NodeState::Running)
}

/// No running Sentinel flags the master (down, failing over): its `flags` are just `master`.
pub(crate) async fn master_unflagged(cluster: &Cluster) -> Result<(), String> {
    for s in sentinels(cluster) {
        let flags = redis::master_flags(&s.endpoint()).await?;
        if flags != "master" {
            return Err(format!("{} flags the master {flags}", s.name()));
        }
    }
    Ok(())
}
