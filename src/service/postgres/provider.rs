//! PostgreSQL 15 streaming replication: `pg1` starts as the primary (initdb), `pg2..` clone it
//! with `pg_basebackup -R` and stream from it, all by host name. The entrypoint decides the role
//! at every start from what the peers answer (see `docker/postgres/entrypoint.sh`), so a killed
//! primary that comes back after a promotion re-clones from the new one. The leader is the one
//! server that answers `pg_is_in_recovery() = false`; there is no failover of its own: the
//! `promote` fault calls [`promote`] (`pg_promote()` on the first running replica).

use std::time::Duration;

use tokio_postgres::{NoTls, SimpleQueryMessage};

use crate::cluster::{
    Cluster, ClusterError, Node, NodeRole, NodeSpec, NodeState, PROBE_TIMEOUT, container_hostname,
};

/// The server's client port inside its container.
pub(crate) const CLIENT_PORT: u16 = 5432;
/// How long `pg_promote` may wait for the promotion to finish (its `wait_seconds`).
const PROMOTE_WAIT_SECONDS: u32 = 10;

/// The nodes: `pg1` the initial primary, then the replicas, each told its peers' host names.
pub(crate) fn node_specs(run_id: &str, size: usize) -> Vec<NodeSpec> {
    let names: Vec<String> = (1..=size).map(|i| format!("pg{i}")).collect();
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let peers: Vec<String> = names
                .iter()
                .filter(|n| *n != name)
                .map(|n| container_hostname(run_id, n))
                .collect();
            NodeSpec {
                name: name.clone(),
                role: NodeRole::Server,
                port: CLIENT_PORT,
                tls_port: None,
                env: vec![
                    (
                        "PG_ROLE".into(),
                        if i == 0 { "primary" } else { "replica" }.into(),
                    ),
                    ("PG_HOST".into(), container_hostname(run_id, name)),
                    ("PG_PEERS".into(), peers.join(" ")),
                ],
            }
        })
        .collect()
}

/// The connection settings of a probe or a client to `endpoint` (`host:port`).
pub(crate) fn config_for(endpoint: &str, connect_timeout: Duration) -> tokio_postgres::Config {
    let (host, port) = endpoint
        .rsplit_once(':')
        .and_then(|(h, p)| p.parse::<u16>().ok().map(|p| (h.to_string(), p)))
        .unwrap_or_else(|| (endpoint.to_string(), CLIENT_PORT));
    let mut cfg = tokio_postgres::Config::new();
    cfg.host(&host)
        .port(port)
        .user("postgres")
        .dbname("postgres")
        .application_name("lockbench")
        .connect_timeout(connect_timeout);
    cfg
}

/// Runs `sql` (simple protocol, one or more statements) on `endpoint` over a fresh connection,
/// within `limit`: the first column of every row returned, as text (`NULL` as empty).
pub(crate) async fn query_with(
    endpoint: &str,
    sql: &str,
    limit: Duration,
) -> Result<Vec<String>, String> {
    let run = async {
        let (client, connection) = config_for(endpoint, limit)
            .connect(NoTls)
            .await
            .map_err(|e| format!("connecting to {endpoint}: {}", describe(&e)))?;
        let driver = tokio::spawn(connection);
        let res = client.simple_query(sql).await;
        drop(client);
        driver.abort();
        let rows = res.map_err(|e| format!("{endpoint}: `{sql}`: {}", describe(&e)))?;
        Ok(rows
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or_default().to_string()),
                _ => None,
            })
            .collect())
    };
    tokio::time::timeout(limit, run)
        .await
        .map_err(|_| format!("{endpoint} did not answer `{sql}` within {limit:?}"))?
}

/// [`query_with`] within [`PROBE_TIMEOUT`].
pub(crate) async fn query(endpoint: &str, sql: &str) -> Result<Vec<String>, String> {
    query_with(endpoint, sql, PROBE_TIMEOUT).await
}

/// A server error with its SQLSTATE and detail, or the client error as it is.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// The one value of a one-row answer.
fn single(rows: Vec<String>, what: &str) -> Result<String, String> {
    rows.into_iter()
        .next()
        .ok_or_else(|| format!("{what}: no row returned"))
}

/// Whether the server at `endpoint` is in recovery (a replica): `pg_is_in_recovery()`.
async fn in_recovery(endpoint: &str) -> Result<bool, String> {
    let v = single(
        query(endpoint, "SELECT pg_is_in_recovery()").await?,
        "pg_is_in_recovery",
    )?;
    parse_bool(&v).ok_or_else(|| format!("pg_is_in_recovery() answered {v:?}"))
}

/// PostgreSQL's text booleans (`t`, `f`).
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "t" | "true" | "on" => Some(true),
        "f" | "false" | "off" => Some(false),
        _ => None,
    }
}

fn running_servers(cluster: &Cluster) -> impl Iterator<Item = &Node> {
    cluster
        .servers()
        .filter(|n| n.state() == NodeState::Running)
}

/// Every running server's answer to `pg_is_in_recovery()`.
async fn roles(cluster: &Cluster) -> Vec<(&Node, Result<bool, String>)> {
    let mut out = Vec::new();
    for n in running_servers(cluster) {
        out.push((n, in_recovery(&n.endpoint()).await));
    }
    out
}

/// Streaming replicas the primary at `endpoint` reports (`pg_stat_replication`).
async fn streaming_replicas(endpoint: &str) -> Result<usize, String> {
    let v = single(
        query(
            endpoint,
            "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'",
        )
        .await?,
        "pg_stat_replication",
    )?;
    v.parse()
        .map_err(|_| format!("pg_stat_replication count {v:?}"))
}

/// Ready: every server answers, exactly one is a primary, and it reports every other server
/// streaming from it.
pub(crate) async fn ready(cluster: &Cluster) -> Result<(), String> {
    let roles = roles(cluster).await;
    let mut primaries = Vec::new();
    for (n, r) in &roles {
        match r {
            Ok(false) => primaries.push(*n),
            Ok(true) => {}
            Err(e) => return Err(format!("{} does not answer: {e}", n.name())),
        }
    }
    let [primary] = primaries[..] else {
        return Err(format!(
            "{} primaries (not in recovery): {:?}",
            primaries.len(),
            primaries.iter().map(|n| n.name()).collect::<Vec<_>>()
        ));
    };
    let replicas = cluster.servers().count() - 1;
    let streaming = streaming_replicas(&primary.endpoint()).await?;
    if streaming < replicas {
        return Err(format!(
            "primary {} has {streaming} of {replicas} replicas streaming",
            primary.name()
        ));
    }
    Ok(())
}

/// The one running server that is not in recovery; `None` when none is, or more than one.
pub(crate) async fn leader(cluster: &Cluster) -> Result<Option<String>, ClusterError> {
    let primaries: Vec<&Node> = roles(cluster)
        .await
        .into_iter()
        .filter(|(_, r)| *r == Ok(false))
        .map(|(n, _)| n)
        .collect();
    Ok(match primaries[..] {
        [one] => Some(one.name().to_string()),
        _ => None,
    })
}

/// A primary that takes writes (not read-only), or a replica in recovery whose WAL receiver
/// streams.
pub(crate) async fn serving(node: &Node) -> Result<(), String> {
    let endpoint = node.endpoint();
    if in_recovery(&endpoint).await? {
        let status = query(&endpoint, "SELECT status FROM pg_stat_wal_receiver").await?;
        match status.first().map(String::as_str) {
            Some("streaming") => Ok(()),
            other => Err(format!(
                "a replica whose WAL receiver is {}",
                other.unwrap_or("not running")
            )),
        }
    } else {
        let ro = single(
            query(&endpoint, "SHOW transaction_read_only").await?,
            "transaction_read_only",
        )?;
        match parse_bool(&ro) {
            Some(false) => Ok(()),
            _ => Err(format!("a primary with transaction_read_only = {ro}")),
        }
    }
}

/// Promotes the first running replica (`pg_promote(true, 10)`), points the other running
/// replicas at it, and names it once it takes writes.
pub(crate) async fn promote(cluster: &Cluster) -> Result<String, ClusterError> {
    let fail = |node: &str, error: String| ClusterError::Fault {
        node: node.to_string(),
        error,
    };
    let mut replicas = Vec::new();
    for (n, r) in roles(cluster).await {
        if r == Ok(true) {
            replicas.push(n);
        }
    }
    let Some((new, others)) = replicas.split_first() else {
        return Err(fail("-", "no running replica to promote".into()));
    };
    let wait = Duration::from_secs(PROMOTE_WAIT_SECONDS.into()) + PROBE_TIMEOUT;
    let done = query_with(
        &new.endpoint(),
        &format!("SELECT pg_promote(true, {PROMOTE_WAIT_SECONDS})"),
        wait,
    )
    .await
    .map_err(|e| fail(new.name(), e))?;
    if done.first().map(String::as_str) != Some("t") {
        return Err(fail(
            new.name(),
            format!("pg_promote did not finish within {PROMOTE_WAIT_SECONDS} s: {done:?}"),
        ));
    }
    // The other replicas follow the new primary's timeline (recovery_target_timeline = latest).
    for r in others {
        let sql = format!(
            "ALTER SYSTEM SET primary_conninfo = 'host={} port={CLIENT_PORT} user=postgres'",
            new.hostname()
        );
        query(&r.endpoint(), &sql)
            .await
            .map_err(|e| fail(r.name(), e))?;
        query(&r.endpoint(), "SELECT pg_reload_conf()")
            .await
            .map_err(|e| fail(r.name(), e))?;
    }
    let until = tokio::time::Instant::now() + wait;
    loop {
        match serving(new).await {
            Ok(()) => return Ok(new.name().to_string()),
            Err(e) if tokio::time::Instant::now() >= until => {
                return Err(fail(new.name(), format!("promoted but not writable: {e}")));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The version the server at `endpoint` reports (`SHOW server_version`: `15.18 (Debian ...)`).
pub(crate) async fn server_version(endpoint: &str) -> Result<String, String> {
    let v = single(
        query(endpoint, "SHOW server_version").await?,
        "server_version",
    )?;
    version(&v).ok_or_else(|| crate::cluster::no_version(&v))
}

/// The version number of `SHOW server_version`'s answer.
fn version(text: &str) -> Option<String> {
    text.split_whitespace()
        .next()
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_first_and_every_node_knows_its_peers() {
        let specs = node_specs("r", 3);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pg1", "pg2", "pg3"]);
        let env = |i: usize, k: &str| {
            specs[i]
                .env
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(env(0, "PG_ROLE"), "primary");
        assert_eq!(env(2, "PG_ROLE"), "replica");
        assert_eq!(env(1, "PG_PEERS"), "lb-r-pg1 lb-r-pg3");
        assert_eq!(env(1, "PG_HOST"), "lb-r-pg2");
    }

    #[test]
    fn reads_the_version_number() {
        assert_eq!(
            version("15.18 (Debian 15.18-0+deb12u1)").as_deref(),
            Some("15.18")
        );
        assert_eq!(version(""), None);
        assert_eq!(version("unknown"), None);
    }

    #[test]
    fn endpoints_split_into_host_and_port() {
        let cfg = config_for("127.0.0.1:54321", PROBE_TIMEOUT);
        assert_eq!(cfg.get_ports(), [54321]);
        assert_eq!(parse_bool("t"), Some(true));
        assert_eq!(parse_bool("f"), Some(false));
        assert_eq!(parse_bool("x"), None);
    }
}
