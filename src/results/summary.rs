//! `summary.json`: a cell's statistics, safety and fault windows, and the types its fields
//! hold. The statistics ([`crate::stats`]) and the checkers ([`crate::check`]) compute them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Safety, SafetyVerdict};
use crate::plan::CellId;

/// The per-cell results (`summary.json`); see `docs/book/src/results-schema.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    /// [`super::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The cell's coordinates (system, strategy, workload, chaos, clients), flat in the JSON.
    #[serde(flatten)]
    pub id: CellId,
    /// Granted acquisitions in the measured window.
    pub acquisitions: u64,
    /// Length of the measured window (warm-up to end), seconds.
    pub duration_s: f64,
    /// Where the measured window starts: operations starting before it (the warm-up) are left
    /// out of every figure, µs since the cell started (the cell's `warmup_us`). 0 in summaries
    /// written before it was recorded.
    #[serde(default)]
    pub warmup_us: u64,
    /// Granted acquisitions per second of the measured window.
    pub throughput_per_s: f64,
    /// Acquire invoke (open loop: intended start) → `ok`.
    pub acquire_latency_us: LatencySummary,
    /// Release invoke → the next, already waiting, holder's acquire `ok` on the same key.
    pub handoff_latency_us: LatencySummary,
    /// Acquire `ok` → release invoke.
    pub hold_time_us: LatencySummary,
    /// The hold times the workload asked for, over the same holds as `hold_time_us`.
    #[serde(default)]
    pub hold_requested_us: LatencySummary,
    /// The think times the workload asked for (closed loop).
    #[serde(default)]
    pub think_requested_us: LatencySummary,
    /// A client's previous outcome → its next acquire invoke, over the same pauses.
    #[serde(default)]
    pub think_time_us: LatencySummary,
    /// Open loop: acquire invoke − its intended start.
    #[serde(default)]
    pub arrival_lag_us: LatencySummary,
    /// Release invoke → release `ok`.
    pub release_latency_us: LatencySummary,
    /// Wake-ups of every measured attempt, granted or not, per granted acquisition; `None`
    /// where the client cannot see wake-ups (or nothing was granted).
    pub wakeups_per_acquisition: Option<f64>,
    /// Server round trips of every measured attempt, granted or not, per granted acquisition.
    pub requests_per_acquisition: Option<f64>,
    /// Wake-ups of every measured attempt; `None` where the client cannot see them.
    pub wakeups_total: Option<u64>,
    /// Server round trips of every measured attempt.
    pub requests_total: u64,
    /// Checks made because no notification came within the fallback poll interval, over every
    /// measured attempt: a broken wake-up path shows here.
    pub fallback_polls: u64,
    /// Grants that overtook an earlier waiter on the same key, one per overtaken waiter.
    pub fifo_inversions: u64,
    /// What "earlier" meant for `fifo_inversions`: queue position or invoke time.
    #[serde(default)]
    pub fifo_basis: FifoBasis,
    /// `None` when no client acquired anything.
    pub jain_fairness: Option<f64>,
    /// Longest acquire wait, any outcome, open waits measured to the end.
    pub max_wait_us: u64,
    /// Acquisitions that ran out of their deadline.
    pub timeouts: u64,
    /// Failed or unknown outcomes other than timeouts, by error kind (`connection`, `lost`,
    /// `unsupported`, `server`; `unclassified` for events written without a kind).
    pub errors: BTreeMap<String, u64>,
    /// The same outcomes by error text, for reading what happened.
    #[serde(default)]
    pub error_messages: BTreeMap<String, u64>,
    /// Acquire or release outcomes that were `info` (may or may not have happened).
    pub indeterminate: u64,
    /// `lease_lost` events.
    pub lost_leases: u64,
    /// Operations invoked but never completed before the history ended.
    pub unfinished: u64,
    /// Outcomes with no matching invoke (a damaged or truncated history).
    pub unmatched: u64,
    /// One entry per second of the measured window, empty seconds included.
    pub per_second: Vec<SecondStats>,
    /// The checkers' verdict with its counts and first violations; filled by
    /// [`crate::check::evaluate_history`] (statistics alone leave it `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<Safety>,
    /// One entry per nemesis fault window, in start order, with the figures attributed to it;
    /// filled by [`crate::check::evaluate_history`] (empty, and not written, without faults).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultWindow>,
    /// From `cell.json`: how long the cluster took to be healthy before the cell, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_ms: Option<f64>,
    /// A reentrant lock's re-entries (absent for every other kind): what taking a held lock
    /// again cost. The figures above count outer acquisitions only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reentry: Option<ReentryCost>,
    /// A read-write lock's readers and writers apart (absent for every other kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwlock: Option<RwLockFigures>,
    /// A semaphore's occupancy (absent for every other kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semaphore: Option<SemaphoreFigures>,
    /// A tryLock workload's (`acquire_timeout = "0s"`) share of attempts granted; absent for
    /// every workload that waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub try_lock: Option<TryLockFigures>,
    /// The one-way latency the cell's relays added between every client and every server
    /// (`workload_spec.client_latency`), µs; absent when the clients connected directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_latency_us: Option<u64>,
    /// Up to this much more per chunk (`workload_spec.client_jitter`), µs; absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_jitter_us: Option<u64>,
    /// The one-way latency the cluster's relays added between every two of its nodes
    /// (`workload_spec.peer_latency`), µs; absent when they connected directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_latency_us: Option<u64>,
    /// Up to this much more per chunk (`workload_spec.peer_jitter`), µs; absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_jitter_us: Option<u64>,
    /// The cluster's handoff floor, measured before its cells (`cell.json`'s
    /// `handoff_floor`): the protocol's fewest steps from a release to the next holder;
    /// absent where none was measured (a target, the mock, a cell from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_floor: Option<super::floor::HandoffFloor>,
    /// The cell's handoff p50 over the floor's p50: 1.0 is the protocol's minimum; absent
    /// without a floor or without a handoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_over_floor: Option<f64>,
    /// The version the cell's servers reported (`cell.json`'s `server_version`); absent where
    /// nothing was asked (the mock) and in cells from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
}

/// One mode of a read-write lock (`summary.json`'s `rwlock.readers` or `rwlock.writers`),
/// over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeFigures {
    /// Granted acquisitions in this mode.
    pub acquisitions: u64,
    /// Those per second of the measured window.
    pub per_s: f64,
    /// Acquire invoke (open loop: intended start) → `ok`, µs, of those acquisitions.
    pub latency_us: LatencySummary,
}

/// A read-write lock's figures (`summary.json`'s `rwlock`), over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RwLockFigures {
    /// Acquisitions that asked to read.
    pub readers: ModeFigures,
    /// Acquisitions that asked to write (or said no mode: exclusive).
    pub writers: ModeFigures,
    /// The longest writer wait, any outcome (a writer that gave up waited until it did; one
    /// still waiting at the end waited to the end), µs: writer starvation.
    pub writer_wait_max_us: u64,
    /// The 99th percentile of the writers' waits, counted as `writer_wait_max_us`, µs.
    pub writer_wait_p99_us: u64,
    /// The 99th percentile of the readers' waits, counted the same way, µs.
    pub reader_wait_p99_us: u64,
    /// Readers holding one key at once, time-weighted over the measured window and averaged
    /// over the keys asked for.
    pub concurrent_readers_mean: f64,
    /// The most readers holding one key at once in the measured window.
    pub concurrent_readers_max: u64,
}

/// A semaphore's figures (`summary.json`'s `semaphore`), over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SemaphoreFigures {
    /// How many may hold one key at once (`cell.json`'s `lock.permits`).
    pub permits: u32,
    /// Holders of one key, time-weighted over the measured window and averaged over the keys
    /// asked for, divided by `permits` (0 to 1 when the semaphore is safe).
    pub utilisation: f64,
    /// The most holders of one key at once in the measured window.
    pub holders_max: u64,
    /// Wake-ups per granted acquisition, counted as `wakeups_per_acquisition`; absent where the
    /// client cannot see wake-ups (or nothing was granted), never 0 for that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups_per_grant: Option<f64>,
}

/// A tryLock workload's figures (`summary.json`'s `try_lock`), over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TryLockFigures {
    /// Acquire attempts that started in the measured window, whatever their outcome (one
    /// still open at the end included).
    pub attempts: u64,
    /// Those granted (the summary's `acquisitions`).
    pub granted: u64,
    /// `granted` ÷ `attempts`; absent when nothing was attempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_rate: Option<f64>,
}

/// What re-entering a held lock cost, over the measured window (`summary.json`'s `reentry`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReentryCost {
    /// Re-entries granted (acquires by a client already holding the key).
    pub reentries: u64,
    /// Re-entries refused (the outer lease was known lost).
    pub refused: u64,
    /// Server requests the granted re-entries sent, in all (0 with a client-side count).
    pub requests: u64,
    /// Re-entry invoke → `ok`, µs.
    pub latency_us: LatencySummary,
}

/// Percentiles of one latency, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of samples (0: every other field is 0).
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest sample (top of its histogram bucket).
    pub max: u64,
    /// Arithmetic mean.
    pub mean: f64,
}

/// One second of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    /// Second since the run start (`t_us / 1_000_000`).
    pub second: u64,
    /// Acquisitions granted in this second (its throughput, per second).
    pub acquisitions: u64,
    /// Median acquire latency of those acquisitions, µs (0 when none).
    pub p50_acquire_us: u64,
    /// 99th percentile acquire latency, µs (0 when none).
    pub p99_acquire_us: u64,
    /// Acquisitions that ended in `fail` or `info` (timeouts included) in this second.
    pub failures: u64,
}

/// Which order `fifo_inversions` was judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FifoBasis {
    /// Every granted acquisition reported a queue position: grants are compared with queue order.
    QueuePosition,
    /// Grants are compared with the order of the clients' acquire invokes.
    #[default]
    InvokeTime,
}

/// One nemesis fault window and the figures attributed to it (see [`crate::check::faults`] for how each figure is worked out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct FaultWindow {
    /// The fault's kind (`kill`, `partition`, `pause-node`, `pause-client`, `clock`, ...).
    pub kind: String,
    /// The nodes or client processes it acted on.
    pub targets: Vec<String>,
    /// Its `invoke`, µs on the history's clock.
    pub start_us: u64,
    /// When its start took effect, µs; `None` when it did not start, or the history predates
    /// the field.
    #[serde(default)]
    pub effect_us: Option<u64>,
    /// When its undo was asked for, µs; `None` when the history does not say.
    #[serde(default)]
    pub undo_us: Option<u64>,
    /// The `invoke` → the effect, ms: the time spent applying the fault.
    #[serde(default)]
    pub applying_ms: Option<f64>,
    /// The undo asked for → done (for a kill: the node serves again), ms.
    #[serde(default)]
    pub undoing_ms: Option<f64>,
    /// What the start did, where words are needed: the clock fault says it is modelled, what
    /// the model does, and each node's effect; `partial: ` first when a node refused its part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// Its end (the heal, or a failed start's outcome), µs; `None` when the history shows no
    /// heal (none recorded, or the heal failed).
    pub end_us: Option<u64>,
    /// False when the fault failed to start (its end's error starts with `start:`).
    pub started: bool,
    /// The error of a failed start or heal (or of a heal that succeeded only on retry).
    pub error: Option<String>,
    /// The effect → the first acquire `ok` at or after it, any key, ms; `None` when none came.
    pub first_grant_ms: Option<f64>,
    /// The end → the first acquire `ok` at or after it, ms; `None` when none came or the
    /// window never ended.
    pub recovery_ms: Option<f64>,
    /// The cluster's share of the recovery: the end → the first outcome only the cluster could
    /// give (acquire or release `ok`, acquisition `withdrawn`), ms, at most `recovery_ms`.
    #[serde(default)]
    pub recovery_cluster_ms: Option<f64>,
    /// The clients' share: `recovery_ms` − `recovery_cluster_ms`.
    #[serde(default)]
    pub recovery_clients_ms: Option<f64>,
    /// Requests per client and second inside `[effect_us, end_us]`: each acquisition's
    /// `requests` spread evenly over its invoke → outcome; `None` for an empty window.
    #[serde(default)]
    pub requests_per_client_s: Option<f64>,
    /// The most acquire outcomes `fail` or `info` of one client inside `[effect_us, end_us]`.
    #[serde(default)]
    pub most_failed_per_client: u64,
    /// Acquire `ok` events inside `[effect_us, end_us]` (from `start_us` when the effect is not
    /// recorded; to the history's end when open).
    pub acquisitions: u64,
    /// The findings attributed to the window merged: `invalid` with any violation, else
    /// `unknown` with any possible violation, else `valid`.
    pub verdict: SafetyVerdict,
    /// Mutex violations (certain overlapping holds) attributed to the window; in cells of
    /// another kind of lock, its exclusion checker's violations (a reentrant lock's outer
    /// holds overlapping, a writer overlapping another holder, holders beyond a semaphore's
    /// permits).
    pub overlaps: u64,
    /// Possible overlaps (they need an unknown acquisition to have been granted); in cells of
    /// another kind of lock, its exclusion checker's possible violations.
    pub possible_overlaps: u64,
    /// Lost-update findings (pairs of accepted writes of one value, or a key's totals).
    pub lost_updates: u64,
    /// Accesses the fenced register refused for a stale token.
    pub stale_accesses_rejected: u64,
    /// Grants whose token did not exceed the previous grant's on the key.
    pub token_regressions: u64,
    /// `lease_lost` events.
    pub lost_leases: u64,
    /// Acquire and release outcomes `fail` or `info`, by error kind (`timeout`, `connection`,
    /// ...; `unclassified` without a kind).
    pub errors: BTreeMap<String, u64>,
}
