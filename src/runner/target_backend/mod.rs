//! Runs on clusters the user already runs, named by target files (`lockbench run --target
//! FILE`): nothing is started; clients connect to the target's endpoints with its login, and
//! every key lives under the target's prefix, `<prefix>/<run id>/<cell>`.
//!
//! The rules, each with its error:
//! - Before the first cell, the prefix must hold nothing (listed through the protocol), unless
//!   the target says `allow_existing = true`: lockbench never mixes its keys with data it did
//!   not write, and never removes such data.
//! - After the last cell, and when the run stops early (Ctrl-C, an error), everything under
//!   `<prefix>/<run id>` is removed; never the prefix itself (a ZooKeeper prefix node may carry
//!   the user's ACL).
//! - `environment.json` and `clusters/<system>.json` record [`Target::record`]: never a password.
//! - Faults run only through the target's commands, and only with `faults = true` (see
//!   `faults.rs`): a chaos schedule whose faults need a primitive the commands do not cover is
//!   refused before the run, naming it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

mod faults;
#[cfg(test)]
mod tests;

use super::RunFolder;
use super::backend::{Backend, ClusterShape};
use super::progress::Progress;
use super::worker::WorkerTarget;
use crate::cluster::ConnectInfo;
use crate::nemesis::schedule::Schedule;
use crate::recipe::{AnyRecipe, ClientTls, Credentials, LockError, RecipeConfig};
use crate::system::System;
use crate::target::Target;

/// How long listing or removing the prefix's keys may take.
const KEYS_DEADLINE: Duration = Duration::from_secs(60);
/// How long a run stopped early waits before it looks again for keys its dropped clients'
/// last requests wrote, and how many times it looks.
const ABANDON_SETTLE: Duration = Duration::from_millis(500);
const ABANDON_ROUNDS: usize = 6;
/// How many keys one round of `clean --target` lists.
const CLEAN_BATCH: usize = 1000;
/// How many keys an error about a non-empty prefix lists.
const KEYS_SHOWN: usize = 10;

/// Clusters named by target files, one per system.
#[derive(Debug, Clone, Default)]
pub struct TargetBackend {
    /// The targets, at most one per system.
    pub targets: Vec<Target>,
    /// As [`super::DockerBackend::worker_exe`].
    pub worker_exe: Option<PathBuf>,
}

/// One target as a run uses it.
#[derive(Debug)]
pub struct TargetCluster {
    target: Target,
    info: ConnectInfo,
    login: Option<Credentials>,
    run_root: String,
    /// Runs the target's fault commands (when it has them) and logs them to the run folder.
    commands: faults::CommandLog,
    /// Each isolate command run (the node, the peers it was cut from), which the heal undoes
    /// with the same `{peers}`.
    isolated: std::sync::Mutex<Vec<(String, Vec<String>)>>,
    /// The version its first endpoint reported when the run began, or `unknown (why)`.
    server_version: String,
}

impl TargetBackend {
    /// A backend over `targets` for a run of `schedules`; refuses two targets of one system,
    /// a system whose keys cannot be listed, and a schedule whose faults need a primitive a
    /// target's commands do not cover (naming it).
    pub fn new(targets: Vec<Target>, schedules: &[Schedule]) -> anyhow::Result<TargetBackend> {
        for (i, t) in targets.iter().enumerate() {
            if let Some(other) = targets[..i].iter().find(|o| o.system == t.system) {
                anyhow::bail!(
                    "targets '{}' and '{}' are both {}: a run takes one target per system; run \
                     them one after another",
                    other.name,
                    t.name,
                    t.system
                );
            }
        }
        for t in &targets {
            ops_of(t)?;
        }
        for s in schedules.iter().filter(|s| !s.is_calm()) {
            for t in &targets {
                let covered = faults::covered(t);
                let missing: Vec<&str> = s
                    .primitives()
                    .into_iter()
                    .filter(|p| !covered.contains(p))
                    .collect();
                if missing.is_empty() {
                    continue;
                }
                let fix = if !t.faults {
                    "a target takes faults only when its file says faults = true".to_string()
                } else {
                    format!(
                        "give [commands] {} with its undo ({}), or run the schedule on clusters \
                         lockbench starts",
                        missing.join(", "),
                        "kill/restart, pause/resume, isolate/heal; clock and promote have no \
                         commands yet, and a partition with clients = true cannot be made \
                         by isolate"
                    )
                };
                anyhow::bail!(
                    "the chaos schedule '{}' needs {} on target '{}', whose commands cover {}: \
                     {fix}",
                    s.name,
                    missing.join(", "),
                    t.name,
                    if covered.is_empty() {
                        "nothing".to_string()
                    } else {
                        covered.join(", ")
                    }
                );
            }
        }
        Ok(TargetBackend {
            targets,
            worker_exe: None,
        })
    }

    /// Checks every target before the run's folder is made: its password is at hand, and its
    /// prefix is empty (or `allow_existing`). [`Backend::start`] checks again.
    pub async fn check(&self) -> anyhow::Result<()> {
        for t in &self.targets {
            let login = login(t)?;
            prefix_is_usable(t, &connect_info(t), login.as_ref()).await?;
        }
        Ok(())
    }

    /// The systems the targets run, in the order given.
    pub fn systems(&self) -> Vec<System> {
        self.targets.iter().map(|t| t.system).collect()
    }

    fn target(&self, system: System) -> anyhow::Result<&Target> {
        self.targets
            .iter()
            .find(|t| t.system == system)
            .with_context(|| format!("no target names a {system} cluster"))
    }
}

/// How lockbench lists, removes and probes `target`'s keys, or why a target of its system is
/// refused (the one place that says it).
fn ops_of(target: &Target) -> anyhow::Result<crate::service::TargetOps> {
    crate::service::of(target.system)
        .target_ops()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "target '{}': lockbench cannot list the keys a {} recipe leaves, so it cannot keep \
             its rule of writing only into an empty prefix (nor remove what it wrote); targets \
             run on zookeeper, etcd, redis and redlock",
                target.name,
                target.system
            )
        })
}

/// What clients need to reach `target`.
pub fn connect_info(target: &Target) -> ConnectInfo {
    ConnectInfo {
        system: target.system,
        endpoints: target.endpoints.clone(),
        sentinel_endpoints: target
            .sentinel
            .as_ref()
            .map(|s| s.addresses.clone())
            .unwrap_or_default(),
        address_map: target
            .sentinel
            .as_ref()
            .map(|s| s.nat_map.clone())
            .unwrap_or_default(),
        master_name: target.sentinel.as_ref().map(|s| s.master.clone()),
    }
}

/// The target's login, its password read now (from the file or its variable).
pub fn login(target: &Target) -> anyhow::Result<Option<Credentials>> {
    let tls = target
        .tls
        .as_ref()
        .map(|t| client_tls(target, t))
        .transpose()?;
    let (user, password) = match &target.auth {
        Some(auth) => (
            auth.user.clone(),
            auth.password
                .reveal()
                .map_err(|why| anyhow::anyhow!("target '{}': {why}", target.name))?,
        ),
        None if tls.is_some() => (None, String::new()),
        None => return Ok(None),
    };
    Ok(Some(Credentials {
        user,
        password,
        tls,
    }))
}

/// The target's `[tls]` files, read now.
fn client_tls(target: &Target, tls: &crate::target::Tls) -> anyhow::Result<ClientTls> {
    let read = |field: &str, path: &std::path::Path| {
        std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!(
                "target '{}': tls.{field} = \"{}\" cannot be read: {e}; give the path of a \
                 PEM file (relative to where lockbench runs)",
                target.name,
                path.display()
            )
        })
    };
    Ok(ClientTls {
        ca_pem: read("ca", &tls.ca)?,
        identity: match &tls.client {
            Some((cert, key)) => Some((read("cert", cert)?, read("key", key)?)),
            None => None,
        },
    })
}

/// Up to `KEYS_SHOWN` keys under `prefix` on `target`.
pub async fn keys_under(
    target: &Target,
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
) -> anyhow::Result<Vec<String>> {
    list_under(target, info, login, prefix, KEYS_SHOWN).await
}

/// Up to `limit` keys under `prefix` on `target`, within [`KEYS_DEADLINE`].
async fn list_under(
    target: &Target,
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
    limit: usize,
) -> anyhow::Result<Vec<String>> {
    let ops = ops_of(target)?;
    tokio::time::timeout(KEYS_DEADLINE, (ops.list)(info, login, prefix, limit))
        .await
        .map_err(|_| {
            anyhow::anyhow!("listing the keys under {prefix} took over {KEYS_DEADLINE:?}")
        })?
        .map_err(|e| anyhow::anyhow!("target '{}': {e}", target.name))
}

/// Removes everything under `prefix` on `target`: how many keys went.
pub async fn remove_under(
    target: &Target,
    info: &ConnectInfo,
    login: Option<&Credentials>,
    prefix: &str,
) -> anyhow::Result<u64> {
    let ops = ops_of(target)?;
    tokio::time::timeout(KEYS_DEADLINE, (ops.remove)(info, login, prefix))
        .await
        .map_err(|_| {
            anyhow::anyhow!("removing the keys under {prefix} took over {KEYS_DEADLINE:?}")
        })?
        .map_err(|e| anyhow::anyhow!("target '{}': {e}", target.name))
}

/// The keys under `target`'s prefix (at most a few), once it is shown usable: empty, or
/// `allow_existing`.
async fn prefix_is_usable(
    target: &Target,
    info: &ConnectInfo,
    login: Option<&Credentials>,
) -> anyhow::Result<Vec<String>> {
    let found = keys_under(target, info, login, &target.prefix).await?;
    if !found.is_empty() && !target.allow_existing {
        anyhow::bail!(
            "target '{}': the prefix {} already holds keys lockbench did not write in this \
             run, e.g. {}. lockbench writes only into an empty prefix, so that it never \
             mixes with or removes data that is not its own: give another prefix, remove \
             those keys (a run stopped by a power cut leaves <prefix>/<run id>/...), or set \
             allow_existing = true in the target file",
            target.name,
            target.prefix,
            found.join(", ")
        );
    }
    Ok(found)
}

/// Removes what runs left on `target`: everything under `<prefix>/<run_id>`, or (no run id)
/// under the prefix, which only a prefix lockbench owns allows. How many keys went.
pub async fn clean(target: &Target, run_id: Option<&str>) -> anyhow::Result<u64> {
    ops_of(target)?;
    let root = match run_id {
        Some(id) if !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric()) => {
            format!("{}/{id}", target.prefix)
        }
        Some(id) => anyhow::bail!(
            "--run \"{id}\" is not a run id: give the letters and digits of one, as the run's \
             folder and its keys (<prefix>/<run id>/...) show it"
        ),
        None if target.allow_existing => anyhow::bail!(
            "target '{}' says allow_existing = true, so its prefix {} may hold data that is not \
             lockbench's: name the run to remove with --run ID",
            target.name,
            target.prefix
        ),
        None => {
            return clean_prefix(target).await;
        }
    };
    let info = connect_info(target);
    let login = login(target)?;
    remove_under(target, &info, login.as_ref(), &root).await
}

/// Removes everything under `target`'s prefix, one `<prefix>/<first segment>` subtree at a time
/// (where runs keep their keys), never the prefix itself. How many keys went.
async fn clean_prefix(target: &Target) -> anyhow::Result<u64> {
    let info = connect_info(target);
    let login = login(target)?;
    let mut removed = 0;
    loop {
        let found = list_under(target, &info, login.as_ref(), &target.prefix, CLEAN_BATCH).await?;
        let roots: std::collections::BTreeSet<String> = found
            .iter()
            .filter_map(|k| run_root_of(&target.prefix, k))
            .collect();
        let Some(first) = found.first() else {
            return Ok(removed);
        };
        let mut this_round = 0;
        for root in roots {
            this_round += remove_under(target, &info, login.as_ref(), &root).await?;
        }
        if this_round == 0 {
            anyhow::bail!(
                "target '{}': {first} is not where runs write (<prefix>/<run id>/...), so \
                 lockbench leaves it; remove it by hand",
                target.name
            );
        }
        removed += this_round;
    }
}

/// `<prefix>/<segment>` of a key (or node) listed under `prefix`; Redis listings add
/// " (on host:port)".
fn run_root_of(prefix: &str, key: &str) -> Option<String> {
    let key = key.split(" (on ").next()?;
    let rest = key.strip_prefix(prefix)?.strip_prefix('/')?;
    let segment = rest.split('/').next()?;
    (!segment.is_empty()).then(|| format!("{prefix}/{segment}"))
}

/// The version the server at `endpoint` reports, asked with `login` where the system's probe
/// needs it (Redis' `INFO`).
fn version_probe<'a>(
    system: System,
    endpoint: &'a str,
    login: Option<&'a Credentials>,
) -> crate::cluster::BoxFuture<'a, Result<String, String>> {
    let service = crate::service::of(system);
    match service.target_ops().and_then(|o| o.version) {
        Some(version_as) => version_as(endpoint, login),
        None => service.server_version(endpoint),
    }
}

impl TargetCluster {
    /// Removes what this run wrote, `<prefix>/<run id>` and all under it; never the prefix
    /// itself (a ZooKeeper prefix node may carry the user's ACL). How many keys went.
    async fn clean(&self) -> anyhow::Result<u64> {
        let login = self.login.as_ref();
        remove_under(&self.target, &self.info, login, &self.run_root).await
    }
}

impl Backend for TargetBackend {
    type Cluster = TargetCluster;
    type Client = AnyRecipe;

    async fn start(
        &self,
        shape: ClusterShape,
        run_id: &str,
        folder: &RunFolder,
        progress: &dyn Progress,
    ) -> anyhow::Result<TargetCluster> {
        let system = shape.system;
        shape.refuse_peer_latency(
            "a target's servers are yours (give them delay with your own tools, e.g. Chaos \
             Mesh's NetworkChaos delay, which `lockbench chaos render` writes for a slow fault)",
        )?;
        let target = self.target(system)?.clone();
        let started = Instant::now();
        let info = connect_info(&target);
        let login = login(&target)?;
        prefix_is_usable(&target, &info, login.as_ref()).await?;
        let mut versions = Vec::new();
        for e in &target.endpoints {
            let probe = version_probe(system, e, login.as_ref());
            let v = match tokio::time::timeout(crate::cluster::PROBE_TIMEOUT * 2, probe).await {
                Ok(Ok(v)) => v,
                Ok(Err(why)) => format!("unknown ({why})"),
                Err(_) => "unknown (no answer in time)".to_string(),
            };
            versions.push(v);
        }
        let record = serde_json::json!({
            "system": system.name(),
            "target": target.record(),
            "server_version": versions.first().cloned().unwrap_or_else(|| "unknown".into()),
            "server_versions": versions,
            "nodes": target.endpoints.iter().map(|e| serde_json::json!({
                "name": e, "role": "server", "endpoint": e,
            })).collect::<Vec<_>>(),
            "start_seconds": started.elapsed().as_secs_f64(),
        });
        folder.write_cluster_record(system, &record)?;
        progress.line(&format!(
            "{system}: target '{}' at {} (server {}), keys under {}/{run_id}",
            target.name,
            target.endpoints.join(","),
            versions.first().map_or("unknown", String::as_str),
            target.prefix
        ));
        Ok(TargetCluster {
            server_version: versions
                .first()
                .cloned()
                .unwrap_or_else(|| "unknown (no endpoint)".into()),
            commands: faults::CommandLog::new(folder.path().join(faults::LOG_FILE)),
            isolated: Default::default(),
            run_root: format!("{}/{run_id}", target.prefix),
            target,
            info,
            login,
        })
    }

    async fn connect(
        &self,
        cluster: &TargetCluster,
        config: RecipeConfig,
    ) -> Result<AnyRecipe, LockError> {
        self.connect_via(cluster, &cluster.info, config).await
    }

    fn connect_info(&self, cluster: &TargetCluster) -> Option<ConnectInfo> {
        Some(cluster.info.clone())
    }

    async fn connect_via(
        &self,
        cluster: &TargetCluster,
        via: &ConnectInfo,
        mut config: RecipeConfig,
    ) -> Result<AnyRecipe, LockError> {
        config.credentials = cluster.login.clone();
        crate::service::connect_to(via, config).await
    }

    async fn stop(&self, cluster: TargetCluster, progress: &dyn Progress) -> anyhow::Result<()> {
        let removed = cluster.clean().await?;
        progress.line(&format!(
            "{}: removed {removed} key(s) this run left under {}",
            cluster.target.system, cluster.run_root
        ));
        Ok(())
    }

    async fn abandon(&self, cluster: TargetCluster) {
        // The cell's client tasks were dropped, but a request already on the wire still lands
        // (an INCR, a create): clean, then look again until the run's keys stay gone.
        let mut result = cluster.clean().await;
        for _ in 0..ABANDON_ROUNDS {
            tokio::time::sleep(ABANDON_SETTLE).await;
            let login = cluster.login.as_ref();
            match keys_under(&cluster.target, &cluster.info, login, &cluster.run_root).await {
                Ok(left) if left.is_empty() => break,
                Ok(_) => {
                    let again = cluster.clean().await;
                    result = match (result, again) {
                        (Ok(a), Ok(b)) => Ok(a + b),
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    };
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        match result {
            Ok(n) => eprintln!(
                "lockbench: removed {n} key(s) this run left under {}",
                cluster.run_root
            ),
            Err(e) => eprintln!(
                "lockbench: could not remove what this run left under {}: {e:#}; remove it by \
                 hand",
                cluster.run_root
            ),
        }
    }

    fn key_root(&self, cluster: &TargetCluster) -> String {
        cluster.target.prefix.clone()
    }

    fn credentials(&self, cluster: &TargetCluster) -> Option<Credentials> {
        cluster.login.clone()
    }

    async fn engine(&self) -> String {
        "none (the clusters are the user's own: see target)".to_string()
    }

    async fn server_version(&self, cluster: &TargetCluster) -> Option<String> {
        Some(cluster.server_version.clone())
    }

    fn record(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::Array(
            self.targets.iter().map(Target::record).collect(),
        ))
    }

    fn worker_target(&self, cluster: &TargetCluster) -> anyhow::Result<WorkerTarget> {
        Ok(WorkerTarget {
            exe: super::backend::worker_exe(self.worker_exe.as_ref())?,
            cluster: cluster.info.clone(),
        })
    }
}
