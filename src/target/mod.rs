//! A target: a cluster the user already runs, named by a TOML file (`lockbench run --target
//! FILE`). This module reads and checks the file and says what of it may be recorded;
//! it starts nothing and connects nowhere.
//!
//! ```toml
//! system = "etcd"
//! endpoints = ["10.0.0.1:2379", "10.0.0.2:2379", "10.0.0.3:2379"]
//! prefix = "/lockbench"          # every key lockbench writes lives under it
//! faults = false                 # fault commands run only when true
//! [auth]                         # etcd user, Redis ACL user, ZooKeeper digest user
//! user = "bench"
//! password_env = "BENCH_PASSWORD"   # or password = "..." (never recorded)
//! [tls]                          # etcd, Redis, Redlock: the CA, and the client pair for mutual TLS
//! ca = "certs/ca.pem"
//! cert = "certs/client.pem"
//! key = "certs/client-key.pem"
//! [sentinel]                     # Redis with Sentinel only
//! addresses = ["10.0.0.5:26379"]
//! master = "mymaster"
//! nat_map = { "redis-0:6379" = "10.0.1.5:6379" }   # optional: reported → reachable
//! [[nodes]]                      # optional: what fault commands act on
//! name = "etcd1"
//! address = "10.0.0.1"
//! endpoint = "10.0.0.1:2379"     # optional: how the leader and a restart's return are seen
//! [commands]                     # per fault primitive and its undo; {node} {address} {peers}
//! kill = "ssh {address} sudo systemctl kill etcd"
//! restart = "ssh {address} sudo systemctl start etcd"
//! timeout = "30s"
//! ```
//!
//! Every error names the file, the field and what would be valid, as the workload and chaos
//! files' do. Secrets (a password given in the file) are never part of [`Target::record`].

mod raw;
mod validate;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::spec_error::SpecError;
use crate::system::System;

/// The placeholders a command template may use.
pub const PLACEHOLDERS: [&str; 3] = ["{node}", "{address}", "{peers}"];

/// A validated target file.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The file's name without `.toml`, for run folders and messages.
    pub name: String,
    /// The system the cluster runs.
    pub system: System,
    /// `host:port` of every server clients connect to (Redlock: every master).
    pub endpoints: Vec<String>,
    /// Every key lockbench writes starts with it; nothing outside it is touched.
    pub prefix: String,
    /// Whether a prefix that already holds keys may be used (`allow_existing`, default false).
    pub allow_existing: bool,
    /// Redis with Sentinel: where the Sentinels are and the master's name.
    pub sentinel: Option<Sentinel>,
    /// The user and password, when the cluster asks for them.
    pub auth: Option<Auth>,
    /// Client certificates (etcd).
    pub tls: Option<Tls>,
    /// The nodes fault commands act on.
    pub nodes: Vec<TargetNode>,
    /// The commands of the fault primitives, when the file gives them.
    pub commands: Option<Commands>,
    /// Whether faults may run at all (`faults = true`); false by default.
    pub faults: bool,
}

/// Where Redis' Sentinels are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentinel {
    /// `host:port` of every Sentinel.
    pub addresses: Vec<String>,
    /// The master's name as the Sentinels know it.
    pub master: String,
    /// `host:port` as the Sentinels report a server → `host:port` this machine reaches it at,
    /// for servers behind address translation (Redisson's `natMap`); empty when the reported
    /// addresses are reachable.
    pub nat_map: std::collections::BTreeMap<String, String>,
}

/// A user and where the password comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// The user (etcd user, Redis ACL user, ZooKeeper digest user); `None` for Redis'
    /// `requirepass` alone.
    pub user: Option<String>,
    /// The password.
    pub password: Secret,
}

/// A password: given in the file, or the name of the environment variable that holds it.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// In the file (read, never recorded).
    Inline(String),
    /// In this environment variable, read when lockbench connects.
    Env(String),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Inline(_) => f.write_str("Inline(<hidden>)"),
            Secret::Env(v) => write!(f, "Env({v:?})"),
        }
    }
}

impl Secret {
    /// The password: the inline one, or the variable's value; `Err` names the variable unset.
    pub fn reveal(&self) -> Result<String, String> {
        match self {
            Secret::Inline(p) => Ok(p.clone()),
            Secret::Env(v) => std::env::var(v).map_err(|_| {
                format!("the target's password comes from ${v}, which is not set: export it")
            }),
        }
    }
}

/// Client certificate files (paths as given, relative to the directory lockbench runs in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The CA that signed the servers' certificates.
    pub ca: PathBuf,
    /// The client's certificate and key, when the servers ask for one.
    pub client: Option<(PathBuf, PathBuf)>,
}

/// One node fault commands act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetNode {
    /// Its name (`{node}`), unique in the file.
    pub name: String,
    /// Its address (`{address}`): a host name or IP, as the commands need it.
    pub address: String,
    /// The `host:port` this machine's clients reach it at (one of `endpoints`), when given:
    /// how a fault on the leader finds which node leads, and how a restarted node is seen to
    /// serve again.
    pub endpoint: Option<String>,
}

/// The fault primitives' command templates, each with its undo.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Commands {
    /// `kill` and `restart`.
    pub kill: Option<(String, String)>,
    /// `pause` and `resume`.
    pub pause: Option<(String, String)>,
    /// `isolate` (from `{peers}`) and `heal`.
    pub isolate: Option<(String, String)>,
    /// Every command's deadline (default 30 s).
    pub timeout: Duration,
}

impl Commands {
    /// The primitives these commands cover, by name (`kill`, `pause`, `isolate`).
    pub fn primitives(&self) -> Vec<&'static str> {
        [
            ("kill", self.kill.is_some()),
            ("pause", self.pause.is_some()),
            ("isolate", self.isolate.is_some()),
        ]
        .into_iter()
        .filter(|(_, given)| *given)
        .map(|(name, _)| name)
        .collect()
    }
}

/// Fills a command template: `{node}`, `{address}` and `{peers}` (the other nodes' addresses,
/// comma-separated).
pub fn render(template: &str, node: &TargetNode, peers: &[&TargetNode]) -> String {
    let peers: Vec<&str> = peers.iter().map(|p| p.address.as_str()).collect();
    template
        .replace("{node}", &node.name)
        .replace("{address}", &node.address)
        .replace("{peers}", &peers.join(","))
}

impl Target {
    /// Reads and checks a target file.
    pub fn from_file(path: &Path) -> Result<Target, SpecError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::ReadTarget {
            origin: origin.clone(),
            source,
        })?;
        Target::from_str(&text, &origin)
    }

    /// Parses and checks target text; `origin` (a path or a label) names it in errors and
    /// gives the name.
    #[allow(clippy::should_implement_trait)] // FromStr cannot carry the origin.
    pub fn from_str(text: &str, origin: &str) -> Result<Target, SpecError> {
        let raw: raw::RawTarget =
            toml::from_str(text).map_err(|e| crate::workload::parse_error(origin, text, &e))?;
        validate::target(origin, raw)
    }

    /// What a run may record of the target (`environment.json`): everything but the password,
    /// which shows only as given inline or by the variable's name.
    pub fn record(&self) -> serde_json::Value {
        use serde_json::json;
        let auth = self.auth.as_ref().map(|a| {
            json!({
                "user": a.user,
                "password": match &a.password {
                    Secret::Inline(_) => "(given in the file; not recorded)".to_string(),
                    Secret::Env(v) => format!("(from ${v}; not recorded)"),
                },
            })
        });
        json!({
            "name": self.name,
            "system": self.system.name(),
            "endpoints": self.endpoints,
            "prefix": self.prefix,
            "allow_existing": self.allow_existing,
            "sentinel": self.sentinel.as_ref().map(|s| json!({
                "addresses": s.addresses,
                "master": s.master,
                "nat_map": s.nat_map,
            })),
            "auth": auth,
            "tls": self.tls.as_ref().map(|t| json!({
                "ca": t.ca,
                "cert": t.client.as_ref().map(|c| &c.0),
                "key": t.client.as_ref().map(|c| &c.1),
            })),
            "nodes": self.nodes.iter().map(|n| json!({
                "name": n.name, "address": n.address, "endpoint": n.endpoint,
            }))
                .collect::<Vec<_>>(),
            "faults": self.faults,
            "fault_primitives": self.commands.as_ref().map(Commands::primitives),
        })
    }
}
