//! The kind of lock a workload takes (`lock`, with `read_ratio`, `permits` or `reentry_depth`):
//! read from the file, checked, and written back in its syntax. The kind travels with the cell
//! into `cell.json`, where the checkers read which property to judge.

use serde::{Deserialize, Serialize};

use super::SpecError;
use super::validate::Validator;

/// Valid `permits` of a semaphore: at least one, at most as many as there can be clients.
pub const PERMITS: (i64, i64) = (1, super::CLIENTS.1);
/// Valid `reentry_depth` of a reentrant lock: the outer hold alone (1) up to 64 nested holds.
pub const REENTRY_DEPTH: (i64, i64) = (1, 64);
/// A reentrant lock's depth when the workload does not say: the outer hold and one re-entry.
pub const DEFAULT_REENTRY_DEPTH: u32 = 2;

/// What kind of lock the clients take, and its parameter. Written in `cell.json` as a table
/// (`{"kind": "semaphore", "permits": 5}`); a `cell.json` without it is a mutex's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LockKind {
    /// One holder at a time (the default).
    #[default]
    Mutex,
    /// One holder at a time, which takes the lock again while holding it and releases it as
    /// often: each acquisition nests `depth` holds (1 = the outer hold alone).
    Reentrant {
        /// Holds per acquisition, the outer one included.
        depth: u32,
    },
    /// Readers share, a writer excludes everyone.
    #[serde(rename = "rwlock")]
    RwLock {
        /// The share of acquisitions that read, 0 to 1.
        read_ratio: f64,
    },
    /// At most `permits` holders at once.
    Semaphore {
        /// How many may hold at once.
        permits: u32,
    },
}

impl LockKind {
    /// The kind's name in workload files (`lock`) and in `cell.json`.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::Reentrant { .. } => "reentrant",
            LockKind::RwLock { .. } => "rwlock",
            LockKind::Semaphore { .. } => "semaphore",
        }
    }

    /// Whether it is the plain exclusive mutex.
    pub fn is_mutex(self) -> bool {
        self == LockKind::Mutex
    }

    /// How many may hold one key at once: a semaphore's permits, else 1 (readers of a
    /// read-write lock aside).
    pub fn permits(self) -> u32 {
        match self {
            LockKind::Semaphore { permits } => permits,
            _ => 1,
        }
    }

    /// The kind's fields in the workload file's syntax (`lock` and its parameter), for
    /// [`super::Workload::to_table`]. A mutex, the default, writes nothing: a mutex workload's
    /// `plan.toml` and `workload_spec` stay as they were, readable by earlier lockbench builds.
    pub(super) fn put(self, t: &mut toml::Table) {
        if self == LockKind::Mutex {
            return;
        }
        t.insert("lock".into(), toml::Value::String(self.name().into()));
        let (field, value) = match self {
            LockKind::Mutex => return,
            LockKind::Reentrant { depth } => {
                ("reentry_depth", toml::Value::Integer(i64::from(depth)))
            }
            LockKind::RwLock { read_ratio } => ("read_ratio", toml::Value::Float(read_ratio)),
            LockKind::Semaphore { permits } => {
                ("permits", toml::Value::Integer(i64::from(permits)))
            }
        };
        t.insert(field.into(), value);
    }
}

impl std::fmt::Display for LockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds and what each takes, for an error about `lock`.
const KINDS: &str = "valid kinds are mutex (the default), reentrant (with reentry_depth, \
                     default 2), rwlock (with read_ratio), semaphore (with permits)";

/// `lock` and its parameters as the file gives them.
pub(super) struct RawLock<'a> {
    pub(super) lock: Option<&'a str>,
    pub(super) read_ratio: Option<f64>,
    pub(super) permits: Option<i64>,
    pub(super) reentry_depth: Option<i64>,
}

impl Validator<'_> {
    /// The lock kind: `lock` names it, and each parameter belongs to one kind only.
    pub(super) fn lock(&self, raw: RawLock) -> Result<LockKind, SpecError> {
        let kind = raw.lock.map_or("mutex", str::trim);
        // Each parameter and the kind it belongs to.
        let params = [
            ("read_ratio", raw.read_ratio.is_some(), "rwlock"),
            ("permits", raw.permits.is_some(), "semaphore"),
            ("reentry_depth", raw.reentry_depth.is_some(), "reentrant"),
        ];
        if !["mutex", "reentrant", "rwlock", "semaphore"].contains(&kind) {
            return Err(self.invalid("lock", format!("\"{kind}\""), KINDS));
        }
        for (field, given, owner) in params {
            if given && owner != kind {
                return Err(self.conflict(format!(
                    "field '{field}' applies only to lock = \"{owner}\", and this workload's lock is \
                     \"{kind}\": remove '{field}' or set lock = \"{owner}\""
                )));
            }
        }
        Ok(match kind {
            "mutex" => LockKind::Mutex,
            "reentrant" => LockKind::Reentrant {
                depth: self.range(
                    "reentry_depth",
                    raw.reentry_depth,
                    Some(i64::from(DEFAULT_REENTRY_DEPTH)),
                    REENTRY_DEPTH,
                )? as u32,
            },
            "rwlock" => {
                let r = raw.read_ratio.ok_or_else(|| {
                    self.missing(
                        "read_ratio",
                        "lock = \"rwlock\" needs the share of acquisitions that read, from 0 to \
                         1, e.g. read_ratio = 0.9",
                    )
                })?;
                if !(0.0..=1.0).contains(&r) {
                    return Err(self.out_of_range(
                        "read_ratio",
                        r,
                        "0..=1 (the share of acquisitions that read: 0 only writers, 1 only readers)",
                    ));
                }
                LockKind::RwLock { read_ratio: r }
            }
            _ => {
                if raw.permits.is_none() {
                    return Err(self.missing(
                        "permits",
                        &format!(
                            "lock = \"semaphore\" needs how many may hold at once, {}..={}, \
                             e.g. permits = 5",
                            PERMITS.0, PERMITS.1
                        ),
                    ));
                }
                LockKind::Semaphore {
                    permits: self.range("permits", raw.permits, None, PERMITS)? as u32,
                }
            }
        })
    }
}
