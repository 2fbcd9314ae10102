//! The server settings lockbench gives that differ from the packages' defaults, as data: each
//! system's table lives in `service/<name>/settings.rs` beside its facts ([`Facts::settings`]),
//! and everything that says or applies a setting reads it there. The providers pass a tuned
//! setting to the image as its environment variable, so the table is what runs; a fixed one is
//! written into the entrypoint, and a test holds the table to that text. Cells and clusters
//! record which settings their servers ran with ([`SettingsRecord`]); the guide's systems
//! chapter prints the same table.
//!
//! What counts as a package's default: the value the server takes when the setting is not
//! given, with the configuration the Debian package ships where the server needs a file
//! (ZooKeeper's `conf_example/zoo.cfg`, MariaDB's `50-server.cnf`). Paths, ports, names and
//! peers (the wiring) are not listed.
//!
//! [`Facts::settings`]: super::Facts::settings

use serde::{Deserialize, Serialize};

/// One server setting lockbench gives that differs from its package's default.
#[derive(Debug)]
pub struct ServerSetting {
    /// Which of the system's servers take it (`server`, `sentinel`).
    pub node: &'static str,
    /// Its name as the server's documentation spells it (`tickTime`, `down-after-milliseconds`).
    pub name: &'static str,
    /// lockbench's value, with its unit.
    pub value: &'static str,
    /// The package's default, with its unit.
    pub default: &'static str,
    /// How the image is told.
    pub source: Source,
    /// Why lockbench sets it, in one sentence.
    pub reason: &'static str,
}

/// How an image is given a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Tuned: the provider passes `var=value` to the container, and without it (a run with
    /// `--server-defaults`) the entrypoint leaves the package's default.
    Env {
        /// The entrypoint's environment variable.
        var: &'static str,
        /// Its value.
        value: &'static str,
    },
    /// Fixed: the entrypoint always gives it, as this text of the script (the containers, the
    /// faults or the recipes need it, whatever the run's option).
    Fixed(&'static str),
}

impl ServerSetting {
    /// Whether `--server-defaults` leaves it to the package (a tuned setting).
    pub fn tuned(&self) -> bool {
        matches!(self.source, Source::Env { .. })
    }

    /// The setting as a cell or cluster records it.
    pub fn record(&self) -> RecordedSetting {
        RecordedSetting {
            node: self.node.to_string(),
            name: self.name.to_string(),
            value: self.value.to_string(),
            default: self.default.to_string(),
            tuned: self.tuned(),
            reason: self.reason.to_string(),
        }
    }
}

/// The environment variables that give `node`s of a system its tuned `settings`, none when
/// the servers start with their packages' defaults.
pub fn tuned_env(
    settings: &[ServerSetting],
    node: &str,
    server_defaults: bool,
) -> Vec<(String, String)> {
    if server_defaults {
        return Vec::new();
    }
    settings
        .iter()
        .filter(|s| s.node == node)
        .filter_map(|s| match s.source {
            Source::Env { var, value } => Some((var.to_string(), value.to_string())),
            Source::Fixed(_) => None,
        })
        .collect()
}

/// Which settings a cluster's servers ran with: `cell.json`'s and `clusters/*.json`'s
/// `server_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsRecord {
    /// Whether the servers started with their packages' defaults (`--server-defaults`): only
    /// the fixed settings then differ.
    pub server_defaults: bool,
    /// Every setting that differed from its package's default.
    pub differ: Vec<RecordedSetting>,
}

impl SettingsRecord {
    /// What a cluster of a system whose table is `settings` ran with.
    pub fn of(settings: &[ServerSetting], server_defaults: bool) -> SettingsRecord {
        SettingsRecord {
            server_defaults,
            differ: settings
                .iter()
                .filter(|s| !(server_defaults && s.tuned()))
                .map(ServerSetting::record)
                .collect(),
        }
    }

    /// How a report names the mode: `lockbench's` or `the packages' defaults`.
    pub fn mode(&self) -> &'static str {
        if self.server_defaults {
            "the packages' defaults (--server-defaults)"
        } else {
            "lockbench's"
        }
    }
}

/// One setting as recorded ([`ServerSetting::record`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSetting {
    /// Which servers took it.
    pub node: String,
    /// Its name.
    pub name: String,
    /// The value the servers ran with.
    pub value: String,
    /// The package's default.
    pub default: String,
    /// Whether `--server-defaults` leaves it to the package.
    pub tuned: bool,
    /// Why lockbench sets it.
    pub reason: String,
}

/// The guide's table of every system's settings (the systems chapter, held to it by
/// `tests/docs_drift.rs`): one row a setting, `|` escaped.
pub fn markdown_table() -> String {
    let mut s = String::from(
        "| system | node | setting | lockbench | package default | with `--server-defaults` | why |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for f in super::FACTS.iter() {
        if f.settings.is_empty() {
            s.push_str(&format!("| `{}` | | (none differs) | | | | |\n", f.name));
        }
        for x in f.settings {
            let how = match x.source {
                Source::Env { var, .. } => format!("default (`{var}` not given)"),
                Source::Fixed(_) => "kept".to_string(),
            };
            s.push_str(&format!(
                "| `{}` | {} | `{}` | {} | {} | {} | {} |\n",
                f.name,
                x.node,
                x.name,
                cell(x.value),
                cell(x.default),
                how,
                cell(x.reason)
            ));
        }
    }
    s
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table against its image's entrypoint: a tuned setting's variable is read there,
    /// a fixed one's text is there, and no setting is listed twice.
    #[test]
    fn every_setting_is_what_its_entrypoint_gives() {
        for f in super::super::FACTS.iter() {
            let script = f.image.entrypoint();
            let mut seen = std::collections::BTreeSet::new();
            for s in f.settings {
                assert!(
                    seen.insert((s.node, s.name)),
                    "{}: {} {} listed twice",
                    f.name,
                    s.node,
                    s.name
                );
                assert_ne!(s.value, s.default, "{}: {} is its default", f.name, s.name);
                match s.source {
                    Source::Env { var, value } => {
                        assert!(
                            script.contains(&format!("${{{var}"))
                                || script.contains(&format!("${var}")),
                            "{}: {} is given as {var}, which docker/{}/entrypoint.sh does not read",
                            f.name,
                            s.name,
                            f.image.name()
                        );
                        assert!(
                            s.value.starts_with(value),
                            "{}: {} says {} but passes {var}={value}",
                            f.name,
                            s.name,
                            s.value
                        );
                    }
                    Source::Fixed(text) => assert!(
                        script.contains(text),
                        "{}: {} is fixed as `{text}`, which docker/{}/entrypoint.sh does not hold",
                        f.name,
                        s.name,
                        f.image.name()
                    ),
                }
            }
        }
    }

    #[test]
    fn server_defaults_drop_the_tuned_settings_and_keep_the_fixed() {
        let zk = crate::system::System::Zookeeper.facts().settings;
        let ours = SettingsRecord::of(zk, false);
        let tick = ours.differ.iter().find(|s| s.name == "tickTime").unwrap();
        assert_eq!(
            (tick.value.as_str(), tick.default.as_str()),
            ("250 ms", "2000 ms")
        );
        let env = tuned_env(zk, "server", false);
        assert!(
            env.contains(&("ZK_TICK_MS".into(), "250".into())),
            "{env:?}"
        );
        assert!(env.contains(&("ZK_MAX_NOTIFICATION_MS".into(), "2000".into())));
        let theirs = SettingsRecord::of(zk, true);
        assert!(theirs.server_defaults);
        assert!(theirs.differ.iter().all(|s| !s.tuned), "{theirs:?}");
        assert!(theirs.differ.iter().any(|s| s.name == "maxClientCnxns"));
        assert!(tuned_env(zk, "server", true).is_empty());
        // Redlock's servers are Redis's data servers: no Sentinel setting.
        let redlock = crate::system::System::Redlock.facts().settings;
        assert!(!redlock.is_empty() && redlock.iter().all(|s| s.node == "server"));
        let redis = crate::system::System::Redis.facts().settings;
        assert_eq!(
            tuned_env(redis, "sentinel", false),
            [
                ("SENTINEL_DOWN_MS".to_string(), "1000".to_string()),
                ("SENTINEL_FAILOVER_MS".to_string(), "5000".to_string())
            ]
        );
        assert!(tuned_env(redis, "server", false).is_empty());
        // A record reads back as written.
        let json = serde_json::to_string(&ours).unwrap();
        assert_eq!(serde_json::from_str::<SettingsRecord>(&json).unwrap(), ours);
    }
}
