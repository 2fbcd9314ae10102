//! MariaDB replication: `mariadb1` starts as the primary, `mariadb2..` as its GTID replicas
//! (`MASTER_USE_GTID = slave_pos`, read-only), all by host name so a restarted node finds its
//! peers (the entrypoint, `docker/mariadb/entrypoint.sh`, decides at every start whether the
//! node is a primary or a replica). The primary is the one server with `@@read_only = 0` that
//! replicates nothing; the cluster is ready when it answers and every replica runs both of its
//! replication threads. There is no failover: [`promote`] is the operator's step.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Row};

use crate::cluster::{
    Cluster, ClusterError, Node, NodeRole, NodeSpec, NodeState, PROBE_TIMEOUT, container_hostname,
};

/// The client port in every container.
pub(crate) const CLIENT_PORT: u16 = 3306;
/// The operator's user (all privileges, replication); the entrypoint makes it on every node.
const ADMIN_USER: &str = "lb";
/// The lock clients' user: the `lockbench` database only, so `read_only` refuses its writes.
pub(crate) const CLIENT_USER: &str = "lbclient";
/// Both users' password (the servers listen on this machine's loopback only).
pub(crate) const PASSWORD: &str = "lockbench";
/// The database the clients use (their fencing sequence lives in it).
pub(crate) const DATABASE: &str = "lockbench";

/// `mariadb1` (the primary) to `mariadb<size>`, each told every peer's host name.
pub(crate) fn node_specs(run_id: &str, size: usize) -> Vec<NodeSpec> {
    let names: Vec<String> = (1..=size).map(|i| format!("mariadb{i}")).collect();
    let peers = names
        .iter()
        .map(|n| container_hostname(run_id, n))
        .collect::<Vec<_>>()
        .join(" ");
    names
        .iter()
        .enumerate()
        .map(|(i, name)| NodeSpec {
            env: vec![
                (
                    "MARIADB_ROLE".into(),
                    if i == 0 { "primary" } else { "replica" }.into(),
                ),
                ("MARIADB_HOST".into(), container_hostname(run_id, name)),
                ("MARIADB_PEERS".into(), peers.clone()),
                ("MARIADB_SERVER_ID".into(), (i + 1).to_string()),
            ],
            name: name.clone(),
            role: NodeRole::Server,
            port: CLIENT_PORT,
            tls_port: None,
        })
        .collect()
}

/// Connection options for `endpoint` (`127.0.0.1:port`) as `user`: TCP only (mysql_async
/// would switch to the server's unix socket on a local address, which is inside the container).
pub(crate) fn opts(endpoint: &str, user: &str, db: Option<&str>) -> Result<Opts, String> {
    let (host, port) = endpoint
        .rsplit_once(':')
        .ok_or_else(|| format!("endpoint {endpoint:?} is not host:port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("endpoint {endpoint:?} has no valid port"))?;
    Ok(OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(PASSWORD))
        .db_name(db)
        .prefer_socket(false)
        .tcp_nodelay(true)
        .into())
}

/// Opens an operator's connection to `endpoint` within [`PROBE_TIMEOUT`].
async fn admin(endpoint: &str) -> Result<Conn, String> {
    let o = opts(endpoint, ADMIN_USER, None)?;
    match tokio::time::timeout(PROBE_TIMEOUT, Conn::new(o)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!("{endpoint}: {e}")),
        Err(_) => Err(format!(
            "{endpoint} did not accept a connection within {PROBE_TIMEOUT:?}"
        )),
    }
}

/// Runs `sql` (statements without results) on an open connection, with a deadline.
async fn run(conn: &mut Conn, sql: &str, limit: Duration) -> Result<(), String> {
    tokio::time::timeout(limit, conn.query_drop(sql))
        .await
        .map_err(|_| format!("`{sql}` did not finish within {limit:?}"))?
        .map_err(|e| format!("`{sql}`: {e}"))
}

/// What one server says about its role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Role {
    /// `@@read_only`.
    pub read_only: bool,
    /// Its replication, if it has one configured (`SHOW SLAVE STATUS` returned a row).
    pub replica: Option<Replication>,
}

/// One row of `SHOW SLAVE STATUS`, the fields read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replication {
    /// The primary it replicates (`Master_Host`).
    pub master_host: String,
    /// `Slave_IO_Running`: `Yes`, `No` or `Connecting`.
    pub io_running: String,
    /// `Slave_SQL_Running`: `Yes` or `No`.
    pub sql_running: String,
    /// The GTIDs received from the primary (`Gtid_IO_Pos`).
    pub gtid_io_pos: String,
    /// `Last_IO_Error` and `Last_SQL_Error`, the ones not empty.
    pub last_error: String,
}

impl Replication {
    /// Both replication threads run.
    pub fn running(&self) -> bool {
        self.io_running == "Yes" && self.sql_running == "Yes"
    }
}

impl Role {
    /// Takes writes and replicates nothing: a primary.
    pub fn is_primary(&self) -> bool {
        !self.read_only && self.replica.is_none()
    }
}

/// Reads a column of `SHOW SLAVE STATUS` by name, empty when absent.
fn field(row: &Row, name: &str) -> String {
    row.get_opt::<Option<String>, _>(name)
        .and_then(Result::ok)
        .flatten()
        .unwrap_or_default()
}

fn replication_of(row: &Row) -> Replication {
    Replication {
        master_host: field(row, "Master_Host"),
        io_running: field(row, "Slave_IO_Running"),
        sql_running: field(row, "Slave_SQL_Running"),
        gtid_io_pos: field(row, "Gtid_IO_Pos"),
        last_error: [field(row, "Last_IO_Error"), field(row, "Last_SQL_Error")]
            .into_iter()
            .filter(|e| !e.is_empty())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The role the server at `endpoint` reports, within [`PROBE_TIMEOUT`] per request.
pub(crate) async fn role(endpoint: &str) -> Result<Role, String> {
    let mut conn = admin(endpoint).await?;
    let read = async {
        let ro: Option<i64> = conn
            .query_first("SELECT @@read_only")
            .await
            .map_err(|e| e.to_string())?;
        let rows: Vec<Row> = conn
            .query("SHOW SLAVE STATUS")
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(Role {
            read_only: ro != Some(0),
            replica: rows.first().map(replication_of),
        })
    };
    let r = tokio::time::timeout(PROBE_TIMEOUT, read)
        .await
        .map_err(|_| format!("{endpoint} did not answer within {PROBE_TIMEOUT:?}"))?;
    let _ = tokio::time::timeout(PROBE_TIMEOUT, conn.disconnect()).await;
    r
}

/// Every running server's role (or why it did not answer), in node order.
async fn roles(cluster: &Cluster) -> Vec<(&Node, Result<Role, String>)> {
    let mut out = Vec::new();
    for n in cluster.servers() {
        if n.state() == NodeState::Running {
            out.push((n, role(&n.endpoint()).await));
        }
    }
    out
}

/// Every server runs, exactly one is a primary, and every other replicates with both threads.
pub(crate) async fn ready(cluster: &Cluster) -> Result<(), String> {
    for n in cluster.servers() {
        if n.state() != NodeState::Running {
            return Err(format!("{} is {:?}", n.name(), n.state()));
        }
    }
    let roles = roles(cluster).await;
    let mut primaries = Vec::new();
    for (n, r) in &roles {
        let r = r.as_ref().map_err(|e| format!("{}: {e}", n.name()))?;
        match &r.replica {
            None if !r.read_only => primaries.push(n.name()),
            None => return Err(format!("{} is read-only and replicates nothing", n.name())),
            Some(rep) if !rep.running() => {
                return Err(format!(
                    "{} replicates {} with IO thread {}, SQL thread {} {}",
                    n.name(),
                    rep.master_host,
                    rep.io_running,
                    rep.sql_running,
                    rep.last_error
                ));
            }
            Some(_) => {}
        }
    }
    match primaries.as_slice() {
        [_] => Ok(()),
        [] => Err("no server takes writes (no primary)".into()),
        many => Err(format!("more than one primary: {}", many.join(", "))),
    }
}

/// The one running primary, if exactly one server is.
pub(crate) async fn leader(cluster: &Cluster) -> Result<Option<String>, ClusterError> {
    let primaries: Vec<String> = roles(cluster)
        .await
        .into_iter()
        .filter(|(_, r)| r.as_ref().is_ok_and(Role::is_primary))
        .map(|(n, _)| n.name().to_string())
        .collect();
    Ok(match primaries.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    })
}

/// The primary (the only one), or a replica with both threads running.
pub(crate) async fn serving(cluster: &Cluster, node: &Node) -> Result<(), String> {
    let r = role(&node.endpoint()).await?;
    match &r.replica {
        Some(rep) if rep.running() => Ok(()),
        Some(rep) => Err(format!(
            "replica of {} with IO thread {}, SQL thread {} {}",
            rep.master_host, rep.io_running, rep.sql_running, rep.last_error
        )),
        None if r.read_only => Err("read-only and replicating nothing".into()),
        None => match leader(cluster).await.map_err(|e| e.to_string())? {
            Some(l) if l == node.name() => Ok(()),
            _ => Err("it takes writes, but so does another server".into()),
        },
    }
}

/// `SELECT VERSION()` at `endpoint`: `10.11.18` of `10.11.18-MariaDB-0+deb12u1-log`.
pub(crate) async fn server_version(endpoint: &str) -> Result<String, String> {
    let mut conn = admin(endpoint).await?;
    let v: Option<String> =
        tokio::time::timeout(PROBE_TIMEOUT, conn.query_first("SELECT VERSION()"))
            .await
            .map_err(|_| format!("{endpoint} did not answer within {PROBE_TIMEOUT:?}"))?
            .map_err(|e| e.to_string())?;
    let _ = tokio::time::timeout(PROBE_TIMEOUT, conn.disconnect()).await;
    let text = v.unwrap_or_default();
    version(&text).ok_or_else(|| crate::cluster::no_version(&text))
}

/// The number before the first `-` of a `VERSION()` text.
fn version(text: &str) -> Option<String> {
    let v = text.split('-').next().unwrap_or_default().trim();
    (!v.is_empty() && v.chars().next().is_some_and(|c| c.is_ascii_digit())).then(|| v.to_string())
}

/// How long a promotion waits for the replica to apply what it received from the old primary.
const APPLY_WAIT: Duration = Duration::from_secs(5);

/// Promotes the first running replica: waits (up to [`APPLY_WAIT`]) until it has applied every
/// transaction it received, then `STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0`; the
/// other running replicas are pointed at it. Returns its name.
pub(crate) async fn promote(cluster: &Cluster) -> Result<String, ClusterError> {
    let fail = |node: &str, error: String| ClusterError::Fault {
        node: node.to_string(),
        error,
    };
    let mut chosen = None;
    for (n, r) in roles(cluster).await {
        if let Ok(Role {
            replica: Some(rep), ..
        }) = r
        {
            chosen = Some((n, rep));
            break;
        }
    }
    let Some((node, rep)) = chosen else {
        return Err(fail(
            "mariadb",
            "no running replica to promote (every server is down or a primary)".into(),
        ));
    };
    let mut conn = admin(&node.endpoint())
        .await
        .map_err(|e| fail(node.name(), e))?;
    if !rep.gtid_io_pos.is_empty() {
        // What the old primary sent is applied before the replica takes writes: the fencing
        // sequence continues above every value it replicated.
        let wait = format!(
            "SELECT MASTER_GTID_WAIT('{}', {})",
            rep.gtid_io_pos.replace('\'', ""),
            APPLY_WAIT.as_secs()
        );
        run(&mut conn, &wait, APPLY_WAIT + PROBE_TIMEOUT)
            .await
            .map_err(|e| fail(node.name(), e))?;
    }
    for sql in ["STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = 0"] {
        run(&mut conn, sql, PROBE_TIMEOUT * 5)
            .await
            .map_err(|e| fail(node.name(), e))?;
    }
    let _ = tokio::time::timeout(PROBE_TIMEOUT, conn.disconnect()).await;
    repoint_replicas(cluster, node).await?;
    Ok(node.name().to_string())
}

/// Points every other running replica at the promoted `primary` (size 3 and more).
async fn repoint_replicas(cluster: &Cluster, primary: &Node) -> Result<(), ClusterError> {
    for (n, r) in roles(cluster).await {
        if n.name() == primary.name()
            || !matches!(
                r,
                Ok(Role {
                    replica: Some(_),
                    ..
                })
            )
        {
            continue;
        }
        let mut conn = admin(&n.endpoint())
            .await
            .map_err(|error| ClusterError::Fault {
                node: n.name().to_string(),
                error,
            })?;
        let change = format!(
            "CHANGE MASTER TO MASTER_HOST='{}', MASTER_USER='{ADMIN_USER}', \
             MASTER_PASSWORD='{PASSWORD}', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
            primary.hostname()
        );
        for sql in ["STOP SLAVE", change.as_str(), "START SLAVE"] {
            run(&mut conn, sql, PROBE_TIMEOUT * 5)
                .await
                .map_err(|error| ClusterError::Fault {
                    node: n.name().to_string(),
                    error,
                })?;
        }
        let _ = tokio::time::timeout(PROBE_TIMEOUT, conn.disconnect()).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_primary_first_and_every_node_knows_its_peers() {
        let specs = node_specs("r", 3);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mariadb1", "mariadb2", "mariadb3"]);
        let env = |i: usize, k: &str| {
            specs[i]
                .env
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(env(0, "MARIADB_ROLE"), "primary");
        assert_eq!(env(2, "MARIADB_ROLE"), "replica");
        assert_eq!(env(1, "MARIADB_SERVER_ID"), "2");
        assert_eq!(
            env(1, "MARIADB_PEERS"),
            "lb-r-mariadb1 lb-r-mariadb2 lb-r-mariadb3"
        );
        assert!(specs.iter().all(|s| s.port == 3306));
    }

    #[test]
    fn reads_the_version_number() {
        assert_eq!(
            version("10.11.18-MariaDB-0+deb12u1-log").as_deref(),
            Some("10.11.18")
        );
        assert_eq!(version(""), None);
        assert_eq!(version("MariaDB"), None);
    }

    #[test]
    fn endpoints_become_tcp_options() {
        let o = opts("127.0.0.1:4406", CLIENT_USER, Some(DATABASE)).unwrap();
        assert_eq!(o.ip_or_hostname(), "127.0.0.1");
        assert_eq!(o.tcp_port(), 4406);
        assert!(!o.prefer_socket());
        assert!(opts("nohost", CLIENT_USER, None).is_err());
    }

    #[test]
    fn a_primary_takes_writes_and_replicates_nothing() {
        let rep = Replication {
            master_host: "h".into(),
            io_running: "Yes".into(),
            sql_running: "Yes".into(),
            gtid_io_pos: String::new(),
            last_error: String::new(),
        };
        assert!(rep.running());
        let promoted = Role {
            read_only: false,
            replica: None,
        };
        assert!(promoted.is_primary());
        let replica = Role {
            read_only: true,
            replica: Some(rep),
        };
        assert!(!replica.is_primary());
    }
}
