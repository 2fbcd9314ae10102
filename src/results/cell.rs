//! `cell.json`: what the history does not say about its cell.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Expect, LockKind};
use crate::plan::CellId;

/// What the history does not say about its cell; stored beside it as `cell.json`, so the
/// statistics computed later from the folder equal those written at the end of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellInfo {
    /// The cell's coordinates; `clients` are the clients the workload started (clients that
    /// never acquired still count for fairness).
    #[serde(flatten)]
    pub id: CellId,
    /// Events of operations starting before this are left out.
    #[serde(with = "micros", rename = "warmup_us")]
    pub warmup: Duration,
    /// When the run ended, µs since its start; `None` uses the last event. Pass it so an outage
    /// at the end shows as zero-throughput seconds.
    pub end_us: Option<u64>,
    /// Whether the protected register checked fencing tokens.
    #[serde(default)]
    pub resource: crate::resource::ResourceMode,
    /// The verdict the workload expects for this cell's system and strategy.
    #[serde(default)]
    pub expect: Expect,
    /// How long the cluster took to be healthy (every node up, one leader) before the cell's
    /// clients started, ms; `None` in cells from before the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_ms: Option<f64>,
    /// The kind of lock the cell's clients took, which says what the checkers judge; cells
    /// written before it existed took a mutex.
    #[serde(default)]
    pub lock: LockKind,
    /// The version the cell's servers reported (`3.5.16`, `valkey 8.1.1`), or `unknown (why)`;
    /// absent where nothing was asked (the mock) and in cells from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The server settings that differed from the packages' defaults, and whether the servers
    /// started with those defaults (`--server-defaults`); absent where lockbench started no
    /// server (the mock, a target) and in cells from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_settings: Option<crate::system::settings::SettingsRecord>,
}

/// The workload's `acquire_timeout` as the text of a `cell.json` gives it (its `workload_spec`,
/// in the workload file's syntax); `None` when the file does not say or cannot be read.
pub fn spec_acquire_timeout(cell_json: &str) -> Option<Duration> {
    spec_duration(cell_json, "acquire_timeout")
}

/// The workload's `field` (a duration) as the text of a `cell.json` gives it; `None` when the
/// file does not say or cannot be read.
pub fn spec_duration(cell_json: &str, field: &str) -> Option<Duration> {
    let file: serde_json::Value = serde_json::from_str(cell_json).ok()?;
    let text = file.get("workload_spec")?.get(field)?.as_str()?;
    humantime::parse_duration(text).ok()
}

/// Durations stored as whole microseconds.
mod micros {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_micros() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_micros)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testkit::cell;

    #[test]
    fn the_lock_kind_is_written_and_a_cell_json_without_it_is_a_mutexs() {
        let semaphore = CellInfo {
            lock: LockKind::Semaphore { permits: 5 },
            ..cell(8)
        };
        let json = serde_json::to_value(&semaphore).unwrap();
        assert_eq!(
            json["lock"],
            serde_json::json!({"kind": "semaphore", "permits": 5})
        );
        let back: CellInfo = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, semaphore);
        for (lock, table) in [
            (LockKind::Mutex, serde_json::json!({"kind": "mutex"})),
            (
                LockKind::Reentrant { depth: 3 },
                serde_json::json!({"kind": "reentrant", "depth": 3}),
            ),
            (
                LockKind::RwLock { read_ratio: 0.9 },
                serde_json::json!({"kind": "rwlock", "read_ratio": 0.9}),
            ),
        ] {
            let c = CellInfo { lock, ..cell(2) };
            let json = serde_json::to_value(&c).unwrap();
            assert_eq!(json["lock"], table);
            assert_eq!(serde_json::from_value::<CellInfo>(json).unwrap(), c);
        }
        // Written before cells said their kind: a mutex.
        let mut old = json;
        old.as_object_mut().unwrap().remove("lock");
        let back: CellInfo = serde_json::from_value(old).unwrap();
        assert_eq!(back.lock, LockKind::Mutex);
    }

    #[test]
    fn the_server_settings_are_written_and_a_cell_json_without_them_reads() {
        let zk = crate::system::System::Zookeeper.facts().settings;
        let with = CellInfo {
            server_settings: Some(crate::system::settings::SettingsRecord::of(zk, true)),
            ..cell(2)
        };
        let json = serde_json::to_value(&with).unwrap();
        assert_eq!(json["server_settings"]["server_defaults"], true);
        assert_eq!(
            serde_json::from_value::<CellInfo>(json.clone()).unwrap(),
            with
        );
        let mut old = json;
        old.as_object_mut().unwrap().remove("server_settings");
        assert_eq!(
            serde_json::from_value::<CellInfo>(old)
                .unwrap()
                .server_settings,
            None
        );
        // Not written where nothing was started.
        assert!(
            serde_json::to_value(cell(2))
                .unwrap()
                .get("server_settings")
                .is_none()
        );
    }
}
