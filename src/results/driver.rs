//! `driver.json`, in a library cell's folder: what its driver recorded (the runner writes it,
//! the reports read it).

use serde::{Deserialize, Serialize};

/// `driver.json`: which library ran the cell's clients, how, and its pipe's round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverRecord {
    pub protocol: u32,
    pub library: String,
    /// The version the manifest pins.
    pub version: String,
    /// The version the driver reported in its answer to `hello`.
    pub reported_version: Option<String>,
    pub manifest: String,
    /// The library setting the workload's `lease_ttl` set.
    pub lease_ttl_maps_to: String,
    /// The driver checks the library's lost signal before writing.
    pub checks_lost_before_write: bool,
    /// The library exposes fencing tokens.
    pub tokens: bool,
    pub processes: usize,
    /// Round trips measured (pings and register accesses) on lockbench's monotonic clock.
    pub round_trips: usize,
    pub round_trip_p50_us: Option<u64>,
    pub round_trip_p99_us: Option<u64>,
    /// Acquisitions the driver granted over the whole cell, warm-up included (what
    /// `leases_left` is per).
    #[serde(default)]
    pub acquisitions: u64,
    /// Leases the cell's clients left alive on the server at its end (alive then and not at its
    /// start), where the server can list them (etcd); absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leases_left: Option<u64>,
    /// Why a process stopped answering, naming the driver and the line, for each that did.
    pub broken: Vec<String>,
}
