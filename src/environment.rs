//! `environment.json`: what a run ran on (lockbench's version and commit, the machine's cores,
//! memory and OS, the Docker engine), written when a run starts so a report stands on its own;
//! and what the reports show of it, with the clusters recorded in `clusters/*.json`. Folders
//! written before these files existed read as "not recorded".

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file name in the run folder.
pub const ENVIRONMENT_FILE: &str = "environment.json";

/// What a figure reads when it could not be found out.
fn unknown() -> String {
    "unknown".to_string()
}

/// The machine and build a run ran on. Every field has a default, so a file from an older or
/// newer lockbench still reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// `lockbench --version`.
    #[serde(default = "unknown")]
    pub lockbench_version: String,
    /// The short git commit lockbench was built from, `unknown` outside a git checkout.
    #[serde(default = "unknown")]
    pub git_commit: String,
    /// When the run started, RFC 3339 UTC.
    #[serde(default = "unknown")]
    pub recorded_at: String,
    /// CPUs this process may run on.
    #[serde(default)]
    pub cores: Option<usize>,
    /// `MemTotal` of `/proc/meminfo`, bytes.
    #[serde(default)]
    pub memory_bytes: Option<u64>,
    /// `PRETTY_NAME` of `/etc/os-release`.
    #[serde(default = "unknown")]
    pub os: String,
    /// The kernel as `uname` says: system, release, machine.
    #[serde(default = "unknown")]
    pub kernel: String,
    /// The Docker engine's version, or why it is not known (the mock backend uses none).
    #[serde(default = "unknown")]
    pub docker_server: String,
    /// The targets a run used (`lockbench run --target`), as their records say them: the
    /// endpoints, prefix and user, never a password. Absent on runs of lockbench's own clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<serde_json::Value>,
}

impl Environment {
    /// This process's environment now, with the Docker engine's version (or why it is not
    /// known) as given. Never fails: a figure it cannot read is "unknown (why)".
    pub fn collect(docker_server: String) -> Environment {
        Environment {
            lockbench_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("LOCKBENCH_GIT_COMMIT").to_string(),
            recorded_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string(),
            cores: std::thread::available_parallelism().ok().map(|n| n.get()),
            memory_bytes: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|t| mem_total(&t)),
            os: std::fs::read_to_string("/etc/os-release")
                .map_err(|e| format!("unknown (/etc/os-release: {e})"))
                .map(|t| pretty_name(&t).unwrap_or_else(|| "unknown (no PRETTY_NAME)".into()))
                .unwrap_or_else(|e| e),
            kernel: kernel(),
            docker_server,
            target: None,
        }
    }
}

/// `MemTotal:  16318412 kB` in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` without its quotes.
fn pretty_name(os_release: &str) -> Option<String> {
    let value = os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    Some(value.trim().trim_matches('"').to_string())
}

fn kernel() -> String {
    // SAFETY: uname fills the zeroed struct it is given; each field is NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return format!("unknown (uname: {})", std::io::Error::last_os_error());
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

/// Memory in GiB with one decimal.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// One cluster of a run, as `clusters/<file>.json` recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCluster {
    /// The file's name, e.g. `etcd.json` or `etcd-n5.json`.
    pub file: String,
    /// The system.
    pub system: String,
    /// Server nodes (Redis: master and replicas).
    pub nodes: usize,
    /// Sentinel nodes beside the servers (Redis only).
    pub sentinels: usize,
    /// The version a node reported, "not recorded" in folders from before it was.
    pub server_version: String,
    /// The leader (or master) when the cluster was ready.
    pub leader: String,
    /// Seconds the cluster took to start.
    pub start_seconds: Option<f64>,
    /// The server settings that differed from the packages' defaults; `None` in folders from
    /// before they were recorded, and on a target.
    pub settings: Option<crate::system::settings::SettingsRecord>,
}

/// What a report shows of where a run ran.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnvironment {
    /// `environment.json`, or why it is not shown ("not recorded" when absent).
    pub machine: Result<Environment, String>,
    /// `clusters/*.json`, by file name; a file that does not read is left out with a note in
    /// `problems`.
    pub clusters: Vec<RecordedCluster>,
    /// Files that exist but could not be read, each with its path and why.
    pub problems: Vec<String>,
}

/// The text a report shows for a figure a run folder does not hold.
pub const NOT_RECORDED: &str = "not recorded";

impl RecordedCluster {
    /// Which settings its servers ran with, as a report says it: `lockbench's`, the packages'
    /// defaults, or "not recorded".
    pub fn settings_mode(&self) -> &'static str {
        self.settings
            .as_ref()
            .map_or(NOT_RECORDED, crate::system::settings::SettingsRecord::mode)
    }

    /// Its settings as report rows: (node, setting, value, package default), one a setting
    /// that differed.
    pub fn setting_rows(&self) -> Vec<[&str; 4]> {
        self.settings
            .iter()
            .flat_map(|r| &r.differ)
            .map(|s| {
                [
                    s.node.as_str(),
                    s.name.as_str(),
                    s.value.as_str(),
                    s.default.as_str(),
                ]
            })
            .collect()
    }

    /// The cluster's size as a report says it: `3`, or `3 + 3 sentinels`.
    pub fn size(&self) -> String {
        if self.sentinels == 0 {
            self.nodes.to_string()
        } else {
            format!("{} + {} sentinels", self.nodes, self.sentinels)
        }
    }
}

impl RunEnvironment {
    /// Reads `environment.json` and `clusters/*.json` of the run folder `dir`; never fails.
    pub fn read(dir: &Path) -> RunEnvironment {
        let mut problems = Vec::new();
        let path = dir.join(ENVIRONMENT_FILE);
        let machine = match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(NOT_RECORDED.to_string()),
            Err(e) => Err(format!("{}: {e}", path.display())),
            Ok(t) => serde_json::from_str(&t).map_err(|e| format!("{}: {e}", path.display())),
        };
        if let Err(e) = &machine
            && e != NOT_RECORDED
        {
            problems.push(e.clone());
        }
        let mut clusters = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(dir.join("clusters"))
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        for p in files
            .iter()
            .filter(|p| p.extension() == Some("json".as_ref()))
        {
            let value = std::fs::read_to_string(p)
                .map_err(|e| e.to_string())
                .and_then(|t| {
                    serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string())
                });
            match value {
                Ok(v) => clusters.push(recorded_cluster(p, &v)),
                Err(e) => problems.push(format!("{}: {e}", p.display())),
            }
        }
        RunEnvironment {
            machine,
            clusters,
            problems,
        }
    }

    /// The machine's figures as (label, value) rows, or one row saying they are not recorded.
    pub fn machine_rows(&self) -> Vec<(&'static str, String)> {
        let e = match &self.machine {
            Ok(e) => e,
            Err(why) => return vec![("environment", why.clone())],
        };
        vec![
            ("lockbench", e.lockbench_version.clone()),
            ("git commit", e.git_commit.clone()),
            ("recorded at", e.recorded_at.clone()),
            ("cores", e.cores.map_or_else(unknown, |n| n.to_string())),
            ("memory", e.memory_bytes.map_or_else(unknown, gib)),
            ("OS", e.os.clone()),
            ("kernel", e.kernel.clone()),
            ("Docker engine", e.docker_server.clone()),
        ]
    }
}

fn recorded_cluster(path: &Path, v: &serde_json::Value) -> RecordedCluster {
    let text = |key: &str| v.get(key).and_then(|x| x.as_str()).map(str::to_string);
    // Nodes by role: `None` counts the servers (a node without a role is one).
    let count = |role: Option<&str>| {
        let nodes = v.get("nodes").and_then(|n| n.as_array());
        nodes.map_or(0, |ns| {
            ns.iter()
                .filter(|n| {
                    let r = n.get("role").and_then(|r| r.as_str()).unwrap_or("server");
                    match role {
                        None => r == "server",
                        Some(want) => r == want,
                    }
                })
                .count()
        })
    };
    RecordedCluster {
        file: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        system: text("system").unwrap_or_else(|| NOT_RECORDED.into()),
        nodes: count(None),
        sentinels: count(Some("sentinel")),
        server_version: text("server_version").unwrap_or_else(|| NOT_RECORDED.into()),
        leader: text("leader").unwrap_or_else(|| "none".into()),
        start_seconds: v.get("start_seconds").and_then(|x| x.as_f64()),
        settings: v
            .get("server_settings")
            .and_then(|x| serde_json::from_value(x.clone()).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_meminfo_and_os_release() {
        assert_eq!(
            mem_total("MemFree: 1 kB\nMemTotal:       16318412 kB\n"),
            Some(16318412 * 1024)
        );
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(
            pretty_name("NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n").as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(gib(16 << 30), "16.0 GiB");
    }

    #[test]
    fn collects_this_machine() {
        let e = Environment::collect("27.0".into());
        assert_eq!(e.lockbench_version, env!("CARGO_PKG_VERSION"));
        assert!(!e.git_commit.is_empty());
        assert!(e.cores.unwrap_or(0) >= 1, "{e:?}");
        assert!(e.memory_bytes.unwrap_or(0) > 1 << 20, "{e:?}");
        assert!(e.kernel.starts_with("Linux "), "{e:?}");
        // A file without fields (an older or newer writer) still reads.
        let old: Environment = serde_json::from_str("{}").unwrap();
        assert_eq!(old.os, "unknown");
    }

    #[test]
    fn an_old_folder_reads_as_not_recorded() {
        let dir = std::env::temp_dir().join(format!("lockbench-env-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("clusters")).unwrap();
        let env = RunEnvironment::read(&dir);
        assert_eq!(env.machine, Err(NOT_RECORDED.to_string()));
        assert_eq!(
            env.machine_rows(),
            vec![("environment", NOT_RECORDED.into())]
        );
        assert!(env.clusters.is_empty() && env.problems.is_empty());

        std::fs::write(
            dir.join("clusters/redis.json"),
            r#"{"system":"redis","nodes":[{"role":"server"},{},{"role":"sentinel"}],"leader":"n1","start_seconds":2.5}"#,
        )
        .unwrap();
        std::fs::write(dir.join("clusters/zookeeper.json"), "{ broken").unwrap();
        std::fs::write(dir.join(ENVIRONMENT_FILE), "42").unwrap();
        let env = RunEnvironment::read(&dir);
        assert_eq!(env.clusters.len(), 1);
        let c = &env.clusters[0];
        assert_eq!(
            (c.system.as_str(), c.size().as_str()),
            ("redis", "2 + 1 sentinels")
        );
        assert_eq!(c.server_version, NOT_RECORDED);
        assert_eq!(env.problems.len(), 2, "{:?}", env.problems);
        assert!(env.problems.iter().any(|p| p.contains("zookeeper.json")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
