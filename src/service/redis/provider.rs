//! Redis with Sentinel: `redis1` starts as master, `redis2..` replicate it, and `sentinel1..3`
//! monitor it (quorum 2, 1 s down-after), all by host name so a restarted node is recognised.
//! Ready when every Sentinel names the same master, sees the others and all replicas (each read
//! since its last start), and that master reports every replica connected.

use std::collections::HashMap;

use crate::cluster::{
    Cluster, ClusterError, Node, NodeRole, NodeSpec, NodeState, PROBE_TIMEOUT, container_hostname,
};

pub(crate) const CLIENT_PORT: u16 = 6379;
pub(crate) const SENTINEL_PORT: u16 = 26379;
/// The name Sentinel monitors the master under.
pub const MASTER_NAME: &str = "mymaster";
const SENTINELS: usize = 3;

pub(crate) fn node_specs(run_id: &str, size: usize, persist: bool) -> Vec<NodeSpec> {
    let master = container_hostname(run_id, "redis1");
    let mut specs = Vec::new();
    for i in 1..=size {
        let name = format!("redis{i}");
        let role = if i == 1 { "master" } else { "replica" };
        specs.push(NodeSpec {
            env: vec![
                ("REDIS_ROLE".into(), role.into()),
                ("REDIS_HOST".into(), container_hostname(run_id, &name)),
                ("REDIS_MASTER".into(), master.clone()),
                (
                    "REDIS_PERSIST".into(),
                    if persist { "aof" } else { "none" }.into(),
                ),
            ],
            name,
            role: NodeRole::Server,
            port: CLIENT_PORT,
            tls_port: None,
        });
    }
    for i in 1..=SENTINELS {
        let name = format!("sentinel{i}");
        specs.push(NodeSpec {
            env: vec![
                ("REDIS_ROLE".into(), "sentinel".into()),
                ("REDIS_HOST".into(), container_hostname(run_id, &name)),
                ("REDIS_MASTER".into(), master.clone()),
                ("SENTINEL_QUORUM".into(), "2".into()),
            ],
            name,
            role: NodeRole::Sentinel,
            port: SENTINEL_PORT,
            tls_port: None,
        });
    }
    specs
}

/// Runs one command on `endpoint` (`127.0.0.1:port`) with a connect and response deadline.
pub async fn command(endpoint: &str, cmd: &redis::Cmd) -> Result<redis::Value, String> {
    let client = redis::Client::open(format!("redis://{endpoint}/")).map_err(|e| e.to_string())?;
    let cfg = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(PROBE_TIMEOUT))
        .set_response_timeout(Some(PROBE_TIMEOUT));
    let run = async {
        let mut con = client
            .get_multiplexed_async_connection_with_config(&cfg)
            .await
            .map_err(|e| e.to_string())?;
        cmd.query_async::<redis::Value>(&mut con)
            .await
            .map_err(|e| e.to_string())
    };
    tokio::time::timeout(PROBE_TIMEOUT * 2, run)
        .await
        .map_err(|_| format!("{endpoint} did not answer within {:?}", PROBE_TIMEOUT * 2))?
}

fn as_strings(v: &redis::Value) -> Vec<String> {
    match v {
        redis::Value::Array(items) => items
            .iter()
            .map(|i| redis::from_redis_value_ref::<String>(i).unwrap_or_default())
            .collect(),
        redis::Value::Map(kv) => kv
            .iter()
            .flat_map(|(k, v)| {
                [
                    redis::from_redis_value_ref::<String>(k).unwrap_or_default(),
                    redis::from_redis_value_ref::<String>(v).unwrap_or_default(),
                ]
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Parses `INFO replication`-style `key:value` lines.
pub(crate) fn parse_info(info: &str) -> HashMap<String, String> {
    info.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The master host name each running Sentinel reports.
async fn sentinel_masters(cluster: &Cluster) -> Vec<(String, Result<String, String>)> {
    let mut out = Vec::new();
    for s in cluster
        .nodes()
        .iter()
        .filter(|n| n.role() == NodeRole::Sentinel)
    {
        if s.state() != NodeState::Running {
            continue;
        }
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("get-master-addr-by-name").arg(MASTER_NAME);
        let r = command(&s.endpoint(), &cmd).await.and_then(|v| {
            as_strings(&v)
                .into_iter()
                .next()
                .ok_or_else(|| format!("no master known: {v:?}"))
        });
        out.push((s.name().to_string(), r));
    }
    out
}

pub(crate) async fn ready(cluster: &Cluster) -> Result<(), String> {
    let masters = sentinel_masters(cluster).await;
    let hosts: Vec<&String> = masters
        .iter()
        .filter_map(|(_, m)| m.as_ref().ok())
        .collect();
    if hosts.len() != SENTINELS || hosts.iter().any(|h| *h != hosts[0]) {
        return Err(format!("sentinels disagree or did not answer: {masters:?}"));
    }
    let replicas = cluster.servers().count() - 1;
    for s in cluster
        .nodes()
        .iter()
        .filter(|n| n.role() == NodeRole::Sentinel)
    {
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("MASTER").arg(MASTER_NAME);
        let kv = as_strings(&command(&s.endpoint(), &cmd).await?);
        let count = |k: &str| field(&kv, k).unwrap_or_default();
        if count("num-other-sentinels") != (SENTINELS - 1).to_string()
            || count("num-slaves") != replicas.to_string()
        {
            return Err(format!(
                "{} sees {} other sentinels and {} replicas",
                s.name(),
                count("num-other-sentinels"),
                count("num-slaves")
            ));
        }
    }
    let master = cluster
        .node_by_hostname(hosts[0])
        .ok_or_else(|| format!("sentinel names unknown master {}", hosts[0]))?;
    let mut cmd = redis::cmd("INFO");
    cmd.arg("replication");
    let info = command(&master.endpoint(), &cmd).await?;
    let info = parse_info(&redis::from_redis_value_ref::<String>(&info).unwrap_or_default());
    if info.get("role").map(String::as_str) != Some("master") || replicas_online(&info) != replicas
    {
        return Err(format!("master {} reports {info:?}", master.name()));
    }
    replicas_seen_since_their_start(cluster, master).await?;
    // A Sentinel in TILT would not act on a fault injected now (30 s after its last late tick).
    for s in sentinels(cluster) {
        if let Some(t) = tilt(&s.endpoint()).await? {
            return Err(format!("{} is {t}", s.name()));
        }
    }
    Ok(())
}

/// Every Sentinel has read every replica since that replica last started: the run id it keeps
/// is the one the replica reports (the master already said the replica is connected). A replica
/// restarted a moment ago is connected, listed and unflagged well before Sentinel's next `INFO`
/// of it (every 10 s) notices the reboot, and until then no Sentinel promotes it: a master
/// killed 1.5 s after a replica's restart took 22.8 s to fail over (36.7 s in a test), against
/// about 2 s once the reboot was seen.
async fn replicas_seen_since_their_start(cluster: &Cluster, master: &Node) -> Result<(), String> {
    let mut run_ids = HashMap::new();
    for n in cluster.servers().filter(|n| n.name() != master.name()) {
        run_ids.insert(n.hostname().to_string(), run_id(n).await?);
    }
    for s in sentinels(cluster) {
        let listed = sentinel_replicas(&s.endpoint()).await?;
        if let Some(why) = replica_not_seen(&listed, &run_ids) {
            return Err(format!("{}: {why}", s.name()));
        }
    }
    Ok(())
}

/// The run id `node` reports (`INFO server`): a new one at every start.
async fn run_id(node: &Node) -> Result<String, String> {
    let v = command(&node.endpoint(), ::redis::cmd("INFO").arg("server")).await?;
    let text: String = ::redis::from_redis_value_ref(&v).map_err(|e| e.to_string())?;
    parse_info(&text)
        .remove("run_id")
        .ok_or_else(|| format!("{} reports no run_id in INFO server", node.name()))
}

/// The first replica of `run_ids` (host name → the run id it reports) that a Sentinel's
/// replica list ([`sentinel_replicas`]) does not hold or holds under another run id; `None`
/// when it has seen them all.
fn replica_not_seen(listed: &[Vec<String>], run_ids: &HashMap<String, String>) -> Option<String> {
    let mut hosts: Vec<&String> = run_ids.keys().collect();
    hosts.sort();
    hosts
        .into_iter()
        .find_map(|host| not_seen_since_start(listed, host, &run_ids[host]))
}

/// Why a Sentinel's replica list does not show the replica announced as `host`, which reports
/// `run_id`, as read since its last start (not listed, or kept under an older run id); `None`
/// when it does. Until Sentinel reads a restarted replica again (its `INFO` every 10 s), it
/// does not promote it.
fn not_seen_since_start(listed: &[Vec<String>], host: &str, run_id: &str) -> Option<String> {
    let Some(kv) = replica_entry(listed, host) else {
        return Some(format!("it does not list the replica {host}"));
    };
    let kept = field(kv, "runid").unwrap_or_default();
    (kept != run_id).then(|| {
        format!(
            "it has not read {host} since its restart (it keeps run id {kept:?}, the replica \
             reports {run_id:?})"
        )
    })
}

/// The entry of a Sentinel's replica list for the replica announced as `host`.
fn replica_entry<'a>(listed: &'a [Vec<String>], host: &str) -> Option<&'a Vec<String>> {
    listed
        .iter()
        .find(|kv| field(kv, "ip").as_deref() == Some(host))
}

/// The value of `key` in a flat `[key, value, ...]` list.
fn field(kv: &[String], key: &str) -> Option<String> {
    kv.chunks(2)
        .find(|c| c.len() == 2 && c[0] == key)
        .map(|c| c[1].clone())
}

/// The `flags` Sentinel at `sentinel` keeps for the master it monitors (`master`, or with
/// `s_down`, `o_down`, `failover_in_progress` ...).
pub(crate) async fn master_flags(sentinel: &str) -> Result<String, String> {
    let mut cmd = redis::cmd("SENTINEL");
    cmd.arg("MASTER").arg(MASTER_NAME);
    let kv = as_strings(&command(sentinel, &cmd).await?);
    field(&kv, "flags").ok_or_else(|| format!("SENTINEL MASTER gave no flags: {kv:?}"))
}

/// The replicas the Sentinel at `sentinel` lists for the master, each a flat `[key, value, ...]`
/// list (`ip`, `runid`, `flags` ...).
async fn sentinel_replicas(sentinel: &str) -> Result<Vec<Vec<String>>, String> {
    let mut cmd = redis::cmd("SENTINEL");
    cmd.arg("REPLICAS").arg(MASTER_NAME);
    replica_entries(&command(sentinel, &cmd).await?)
}

/// A `SENTINEL REPLICAS` reply as one flat `[key, value, ...]` list per replica.
fn replica_entries(reply: &redis::Value) -> Result<Vec<Vec<String>>, String> {
    match reply {
        redis::Value::Array(replicas) => Ok(replicas.iter().map(as_strings).collect()),
        other => Err(format!("SENTINEL REPLICAS answered {other:?}")),
    }
}

/// The master named by a majority of the Sentinels.
pub(crate) async fn leader(cluster: &Cluster) -> Result<Option<String>, ClusterError> {
    let mut votes: HashMap<String, usize> = HashMap::new();
    for (_, m) in sentinel_masters(cluster).await {
        if let Ok(h) = m {
            *votes.entry(h).or_default() += 1;
        }
    }
    Ok(votes
        .into_iter()
        .find(|&(_, c)| c > SENTINELS / 2)
        .and_then(|(h, _)| cluster.node_by_hostname(&h).map(|n| n.name().to_string())))
}

/// A Redis server serves Redlock when it answers PING.
pub(crate) async fn answers(node: &Node) -> Result<(), String> {
    let v = command(&node.endpoint(), &::redis::cmd("PING")).await?;
    if v == ::redis::Value::SimpleString("PONG".into()) {
        Ok(())
    } else {
        Err(format!("PING answered {v:?}"))
    }
}

/// The master Sentinel names, or a replica with its link up that no Sentinel sees down.
pub(super) async fn serving(cluster: &Cluster, node: &Node) -> Result<(), String> {
    let mut cmd = ::redis::cmd("INFO");
    cmd.arg("replication");
    let info = command(&node.endpoint(), &cmd).await?;
    let info = parse_info(&::redis::from_redis_value_ref::<String>(&info).unwrap_or_default());
    let role = info.get("role").map(String::as_str).unwrap_or_default();
    let master = leader(cluster).await.map_err(|e| e.to_string())?;
    match role {
        // Named, but a restarted master may be named only until the failover its kill started
        // completes: it serves once no Sentinel sees it down and every replica is connected.
        "master" if master.as_deref() == Some(node.name()) => {
            return master_settled(cluster, &info).await;
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
    // Serving its cluster includes being one a failover can promote: a Sentinel that has not
    // read the restarted replica since its start would not (see `not_seen_since_start`).
    let run_id = run_id(node).await?;
    for s in sentinels(cluster) {
        let listed = sentinel_replicas(&s.endpoint()).await?;
        if let Some(why) = replica_unready(&listed, node.hostname(), &run_id) {
            return Err(format!("{}: {why}", s.name()));
        }
    }
    Ok(())
}

/// Why a Sentinel's replica list does not show the replica `host` (reporting `run_id`) as
/// serving: not read since its start ([`not_seen_since_start`]), or flagged down or
/// disconnected; `None` when it does.
fn replica_unready(listed: &[Vec<String>], host: &str, run_id: &str) -> Option<String> {
    if let Some(why) = not_seen_since_start(listed, host, run_id) {
        return Some(why);
    }
    let flags = replica_entry(listed, host)
        .and_then(|kv| field(kv, "flags"))
        .unwrap_or_default();
    (flags.contains("s_down") || flags.contains("disconnected"))
        .then(|| format!("it sees {host} as {flags}"))
}

async fn master_settled(cluster: &Cluster, info: &HashMap<String, String>) -> Result<(), String> {
    let replicas = cluster.servers().count() - 1;
    let online = replicas_online(info);
    if online != replicas {
        return Err(format!(
            "master with {online} of {replicas} replicas online: {info:?}"
        ));
    }
    master_unflagged(cluster).await
}

/// The replicas a master's `INFO replication` lists as `online`, each host once. Not
/// `connected_slaves`: that counts replication connections, and Redis 8's full sync over an RDB
/// channel can leave a replica listed twice, online and again in `wait_bgsave` from an attempt
/// that was given up, until the master drops the stale one (a cluster found healthy by every
/// other check was judged not ready for 60 s on that count).
fn replicas_online(info: &HashMap<String, String>) -> usize {
    let mut hosts: Vec<&str> = info
        .iter()
        .filter(|(k, _)| {
            k.strip_prefix("slave")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|(_, v)| {
            let fields: HashMap<&str, &str> =
                v.split(',').filter_map(|kv| kv.split_once('=')).collect();
            (fields.get("state") == Some(&"online")).then(|| fields.get("ip").copied())?
        })
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts.len()
}

/// The running Sentinels.
fn sentinels(cluster: &Cluster) -> impl Iterator<Item = &Node> {
    cluster
        .nodes()
        .iter()
        .filter(|n| n.role() == NodeRole::Sentinel && n.state() == NodeState::Running)
}

/// Whether the Sentinel at `sentinel` is in TILT mode, and for how long (`INFO sentinel`'s
/// `sentinel_tilt` and `sentinel_tilt_since_seconds`): a Sentinel whose timer ran over 2 s late
/// (a starved or stalled process) acts on nothing for 30 s after, neither calling a master down
/// nor voting for a failover.
pub(crate) async fn tilt(sentinel: &str) -> Result<Option<String>, String> {
    let v = command(sentinel, ::redis::cmd("INFO").arg("sentinel")).await?;
    let text: String = ::redis::from_redis_value_ref(&v).map_err(|e| e.to_string())?;
    Ok(tilt_of(&parse_info(&text)))
}

/// TILT as `INFO sentinel` reports it, `None` when not in TILT.
fn tilt_of(info: &HashMap<String, String>) -> Option<String> {
    (info.get("sentinel_tilt").map(String::as_str) == Some("1")).then(|| {
        match info.get("sentinel_tilt_since_seconds") {
            Some(s) => format!("in TILT for {s} s"),
            None => "in TILT".to_string(),
        }
    })
}

/// What each running Sentinel knows of the master while no new one is named: TILT, the
/// master's flags and failover state (`SENTINEL MASTER`), so a failover that did not come says
/// why (a Sentinel in TILT, an election or a replica selection that failed).
pub(crate) async fn sentinels_view(cluster: &Cluster) -> String {
    let mut out = Vec::new();
    for s in sentinels(cluster) {
        let tilt = match tilt(&s.endpoint()).await {
            Ok(t) => t.unwrap_or_else(|| "not in TILT".to_string()),
            Err(e) => e,
        };
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("MASTER").arg(MASTER_NAME);
        let master = match command(&s.endpoint(), &cmd).await {
            Ok(v) => {
                let kv = as_strings(&v);
                let f = |k: &str| field(&kv, k).unwrap_or_default();
                format!(
                    "master {} flags {}, failover state {}, {} replicas",
                    f("name"),
                    f("flags"),
                    f("failover-state"),
                    f("num-slaves")
                )
            }
            Err(e) => e,
        };
        let events = match s.logs().await {
            Ok(log) => sentinel_events(&log),
            Err(e) => e.to_string(),
        };
        out.push(format!("{}: {tilt}; {master}; {events}", s.name()));
    }
    out.join("; ")
}

/// How many of a Sentinel's log lines [`sentinel_events`] keeps.
const SENTINEL_EVENTS: usize = 8;

/// The last lines of a Sentinel's log that tell why a failover did or did not come: TILT, a
/// hostname it could not resolve (a blocking lookup stalls Sentinel's one thread, which is how
/// Sentinels enter TILT behind a slow resolver), and the failover's own events.
fn sentinel_events(log: &str) -> String {
    const MARKS: [&str; 9] = [
        "tilt",
        "Failed to resolve",
        "+sdown master",
        "+odown",
        "+try-failover",
        "+elected-leader",
        "+switch-master",
        "-failover-abort",
        "+failover-end",
    ];
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| MARKS.iter().any(|m| l.contains(m)))
        .collect();
    if lines.is_empty() {
        return "log: no TILT, resolver or failover event".to_string();
    }
    let from = lines.len().saturating_sub(SENTINEL_EVENTS);
    format!("log: {}", lines[from..].join(" | "))
}

/// No running Sentinel flags the master (down, failing over): its `flags` are just `master`.
pub(super) async fn master_unflagged(cluster: &Cluster) -> Result<(), String> {
    for s in sentinels(cluster) {
        let flags = master_flags(&s.endpoint()).await?;
        if flags != "master" {
            return Err(format!("{} flags the master {flags}", s.name()));
        }
    }
    Ok(())
}

/// The version a Redis server at `endpoint` reports in `INFO server` (Redis and Redlock).
pub(crate) async fn server_version(endpoint: &str) -> Result<String, String> {
    let v = command(endpoint, ::redis::cmd("INFO").arg("server")).await?;
    let text: String = ::redis::from_redis_value_ref(&v).map_err(|e| e.to_string())?;
    version(&text).ok_or_else(|| crate::cluster::no_version(&text))
}

/// The server's version from `INFO server`: `redis_version:8.0.2` on Redis; on Valkey, which
/// also answers `redis_version:7.2.4` (the Redis release it stays compatible with), its own
/// `valkey_version:8.1.1`, said as `valkey 8.1.1`.
pub(in crate::service) fn version(info: &str) -> Option<String> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    match field("valkey_version:") {
        Some(v) => Some(format!("valkey {v}")),
        None => field("redis_version:"),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_sentinels_log_gives_its_tilt_resolver_and_failover_events_last_eight() {
        let log = "1:X 07 Dec 2026 13:08:13.328 # WARNING Memory overcommit must be enabled!\n\
                   1:X 21 Aug 2024 16:19:15.621 # Failed to resolve hostname 'redis1'\n\
                   1:X 21 Aug 2024 16:19:15.621 # +sdown master mymaster redis1 6379\n\
                   1:X 21 Aug 2024 16:19:45.655 # +tilt #tilt mode entered\n";
        let events = sentinel_events(log);
        assert_eq!(
            events,
            "log: 1:X 21 Aug 2024 16:19:15.621 # Failed to resolve hostname 'redis1' | 1:X 21 \
             Aug 2024 16:19:15.621 # +sdown master mymaster redis1 6379 | 1:X 21 Aug 2024 \
             16:19:45.655 # +tilt #tilt mode entered"
        );
        let many: String = (0..20).map(|i| format!("+odown {i}\n")).collect();
        assert!(sentinel_events(&many).ends_with("+odown 19"));
        assert_eq!(
            sentinel_events(&many).matches("+odown").count(),
            SENTINEL_EVENTS
        );
        assert_eq!(
            sentinel_events("ready to accept connections\n"),
            "log: no TILT, resolver or failover event"
        );
    }
    use super::*;

    #[test]
    fn the_version_is_redis_own_or_valkey_own_never_valkey_compatibility_field() {
        let redis = "# Server\r\nredis_version:8.0.2\r\nredis_git_sha1:00000000\r\n";
        assert_eq!(version(redis).as_deref(), Some("8.0.2"));
        let valkey = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n\
                      valkey_version:8.1.1\r\nredis_git_sha1:00000000\r\n";
        assert_eq!(version(valkey).as_deref(), Some("valkey 8.1.1"));
        assert_eq!(version("# Server\r\n"), None);
    }

    fn replicas(entries: &[&[(&str, &str)]]) -> redis::Value {
        redis::Value::Array(
            entries
                .iter()
                .map(|e| {
                    redis::Value::Array(
                        e.iter()
                            .flat_map(|(k, v)| {
                                [
                                    redis::Value::BulkString(k.as_bytes().to_vec()),
                                    redis::Value::BulkString(v.as_bytes().to_vec()),
                                ]
                            })
                            .collect(),
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn a_replica_counts_as_seen_once_sentinel_keeps_its_current_run_id() {
        let run_ids: HashMap<String, String> = [("r2", "new2"), ("r3", "id3")]
            .into_iter()
            .map(|(h, id)| (h.to_string(), id.to_string()))
            .collect();
        let seen = |r2_runid| {
            replica_not_seen(
                &replica_entries(&replicas(&[
                    &[("ip", "r3"), ("runid", "id3"), ("master-link-status", "ok")],
                    &[
                        ("ip", "r2"),
                        ("runid", r2_runid),
                        ("master-link-status", "ok"),
                    ],
                ]))
                .expect("a replica list"),
                &run_ids,
            )
        };
        assert_eq!(seen("new2"), None);
        // Restarted, listed, connected, but Sentinel has not read it since: the old run id.
        let stale = seen("old2").expect("not seen");
        assert!(
            stale.contains("has not read r2 since its restart"),
            "{stale}"
        );
        let missing = replica_not_seen(
            &replica_entries(&replicas(&[&[
                ("ip", "r3"),
                ("runid", "id3"),
                ("master-link-status", "ok"),
            ]]))
            .expect("a replica list"),
            &run_ids,
        )
        .expect("r2 missing");
        assert!(
            missing.contains("does not list the replica r2"),
            "{missing}"
        );
        // A reply that is no list is an error, not a replica seen.
        assert!(replica_entries(&redis::Value::Nil).is_err());
    }

    #[test]
    fn a_restarted_replica_serves_once_read_since_its_start_and_unflagged() {
        let unready = |runid, flags| {
            replica_unready(
                &replica_entries(&replicas(&[
                    &[("ip", "r3"), ("runid", "id3"), ("flags", "slave")],
                    &[("ip", "r2"), ("runid", runid), ("flags", flags)],
                ]))
                .expect("a replica list"),
                "r2",
                "new2",
            )
        };
        assert_eq!(unready("new2", "slave"), None);
        // Link up, unflagged, but Sentinel keeps the run id of before the restart: it would
        // not promote r2 yet, so r2 does not serve its cluster yet.
        let stale = unready("old2", "slave").expect("not read since the restart");
        assert!(
            stale.contains("has not read r2 since its restart"),
            "{stale}"
        );
        for flags in ["slave,s_down", "slave,disconnected"] {
            let down = unready("new2", flags).expect("flagged");
            assert!(down.contains(&format!("sees r2 as {flags}")), "{down}");
        }
        let missing = replica_unready(&[], "r2", "new2").expect("not listed");
        assert!(
            missing.contains("does not list the replica r2"),
            "{missing}"
        );
    }

    #[test]
    fn replicas_online_counts_each_online_host_once() {
        // A master's answer after a failover on Redis 8.0.2 (from a failed readiness check):
        // three replication connections for two replicas, redis1 listed online and again in
        // `wait_bgsave` with offset 0.
        let info = parse_info(
            "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n\
             slave0:ip=lb-x-redis1,port=6379,state=wait_bgsave,offset=0,lag=0\r\n\
             slave1:ip=lb-x-redis2,port=6379,state=online,offset=1229932,lag=1\r\n\
             slave2:ip=lb-x-redis1,port=6379,state=online,offset=1230242,lag=1\r\n\
             slave_read_repl_offset:7\r\nmaster_repl_offset:1230397\r\n",
        );
        assert_eq!(replicas_online(&info), 2);
        // One replica still syncing is not online.
        let syncing = parse_info(
            "role:master\r\nconnected_slaves:2\r\n\
             slave0:ip=a,port=6379,state=wait_bgsave,offset=0,lag=0\r\n\
             slave1:ip=b,port=6379,state=online,offset=9,lag=0\r\n",
        );
        assert_eq!(replicas_online(&syncing), 1);
        assert_eq!(
            replicas_online(&parse_info("role:master\r\nconnected_slaves:0\r\n")),
            0
        );
    }

    #[test]
    fn info_lines_become_fields() {
        let m = parse_info("# Replication\r\nrole:master\r\nconnected_slaves:2\r\n");
        assert_eq!(m["role"], "master");
        assert_eq!(m["connected_slaves"], "2");
    }

    #[test]
    fn reads_the_version_from_info_server() {
        assert_eq!(
            version("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n").as_deref(),
            Some("7.0.15")
        );
        assert_eq!(version("# Server\r\n"), None);
    }

    #[test]
    fn master_first_then_replicas_then_sentinels() {
        let specs = node_specs("r", 3, false);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "redis1",
                "redis2",
                "redis3",
                "sentinel1",
                "sentinel2",
                "sentinel3"
            ]
        );
        assert_eq!(specs[1].env[0].1, "replica");
    }

    #[test]
    fn tilt_is_read_from_info_sentinel() {
        let info = |text: &str| parse_info(text);
        let tilted = info(
            "# Sentinel\r\nsentinel_masters:1\r\nsentinel_tilt:1\r\nsentinel_tilt_since_seconds:12\r\n",
        );
        assert_eq!(tilt_of(&tilted).as_deref(), Some("in TILT for 12 s"));
        let calm = info("# Sentinel\r\nsentinel_tilt:0\r\nsentinel_tilt_since_seconds:-1\r\n");
        assert_eq!(tilt_of(&calm), None);
        assert_eq!(tilt_of(&info("sentinel_masters:1\r\n")), None);
    }
}
