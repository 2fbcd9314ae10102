//! The nodes lockbench's ZooKeeper recipe wrote under a target's prefix: listed before a run (to
//! refuse a prefix node that already has children) and removed after it, children first.

use std::time::Duration;

use zookeeper_client as zk;

use crate::cluster::ConnectInfo;
use crate::recipe::Credentials;
use crate::service::TargetOps;

/// ZooKeeper's [`TargetOps`]: `srvr` needs no login.
pub(super) const OPS: TargetOps = TargetOps {
    list: |info, login, prefix, limit| Box::pin(list_nodes(info, login, prefix, limit)),
    remove: |info, login, prefix| Box::pin(remove_tree(info, login, prefix)),
    version: None,
    leads: Some(|endpoint, _| Box::pin(leads(endpoint))),
};

/// Whether the server at `endpoint` says `Mode: leader` (or `standalone`) to `srvr`.
async fn leads(endpoint: &str) -> Result<bool, String> {
    let reply = super::provider::four_letter_word(endpoint, "srvr").await?;
    Ok(matches!(
        super::provider::parse_mode(&reply).as_deref(),
        Some("leader" | "standalone")
    ))
}

/// How long one request may take.
const REQUEST: Duration = Duration::from_secs(5);

async fn client(info: &ConnectInfo, login: Option<&Credentials>) -> Result<zk::Client, String> {
    let mut connector = zk::Client::connector();
    if let Some(c) = login {
        connector = connector.with_auth("digest", &c.zookeeper_digest());
    }
    let connect_string = info.endpoints.join(",");
    match tokio::time::timeout(REQUEST * 3, connector.connect(&connect_string)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!("connect to ZooKeeper at {connect_string}: {e}")),
        Err(_) => Err(format!(
            "no ZooKeeper session at {connect_string} within {:?}",
            REQUEST * 3
        )),
    }
}

/// The children of `path`; none when it does not exist.
async fn children(c: &zk::Client, path: &str) -> Result<Vec<String>, String> {
    match tokio::time::timeout(REQUEST, c.list_children(path)).await {
        Ok(Ok(mut v)) => {
            v.sort();
            Ok(v)
        }
        Ok(Err(zk::Error::NoNode)) => Ok(Vec::new()),
        Ok(Err(e)) => Err(format!("list the children of {path}: {e}")),
        Err(_) => Err(format!(
            "listing the children of {path} took over {REQUEST:?}"
        )),
    }
}

/// Up to `limit` nodes under `prefix` (depth first).
async fn list_nodes(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
    limit: usize,
) -> Result<Vec<String>, String> {
    let c = client(info, login).await?;
    let (mut found, mut todo) = (Vec::new(), vec![prefix.to_string()]);
    while let Some(path) = todo.pop() {
        for child in children(&c, &path).await? {
            let full = format!("{path}/{child}");
            found.push(full.clone());
            if found.len() >= limit {
                return Ok(found);
            }
            todo.push(full);
        }
    }
    Ok(found)
}

/// Deletes `prefix` and every node under it, children first: how many nodes went.
async fn remove_tree(
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
) -> Result<u64, String> {
    let c = client(info, login).await?;
    // Every node, parents before children; deleting in reverse removes children first.
    let (mut order, mut todo) = (vec![prefix.to_string()], vec![prefix.to_string()]);
    while let Some(path) = todo.pop() {
        for child in children(&c, &path).await? {
            let full = format!("{path}/{child}");
            order.push(full.clone());
            todo.push(full);
        }
    }
    let mut removed = 0;
    for path in order.iter().rev() {
        match tokio::time::timeout(REQUEST, c.delete(path, None)).await {
            Ok(Ok(())) => removed += 1,
            // Gone already: an ephemeral node whose session closed meanwhile.
            Ok(Err(zk::Error::NoNode)) => {}
            Ok(Err(e)) => return Err(format!("delete {path}: {e}")),
            Err(_) => return Err(format!("deleting {path} took over {REQUEST:?}")),
        }
    }
    Ok(removed)
}
