//! Workloads: what each client does, when and on which key. The workload files
//! (`workloads/*.toml`), parsed strictly and validated into a [`Workload`] before any container
//! starts, with errors that name the file, the field and the valid values; their random choices
//! ([`distribution`]). The precise waits that keep holds, thinks and arrivals on time are
//! [`crate::pace`]; the client loop (`runner::client`) builds on both. The chaos schedules
//! (`chaos/*.toml`) are read beside the nemesis that plays them ([`crate::nemesis::schedule`]).

pub mod distribution;
mod expect;
mod lock;
pub(crate) mod raw;
pub(crate) mod validate;
mod write;

use std::path::Path;
use std::time::Duration;

pub use crate::spec_error::SpecError;

/// A workload file's fields, per table (`"workload"` for the top level, then `"hold, think"`,
/// `"key_distribution, arrival"` and `"stampede"`): what the guide's field tables must list.
pub fn file_fields() -> Vec<(&'static str, &'static [&'static str])> {
    raw::file_fields()
}
pub use expect::{Expect, Expectations};
pub use lock::{DEFAULT_REENTRY_DEPTH, LockKind, PERMITS, REENTRY_DEPTH};

use crate::recipe::Strategy;
use crate::resource::ResourceMode;
use crate::system::System;
pub use distribution::{DurationDist, KeyChooser, KeyDistribution, client_rng};

use raw::RawWorkload;
use validate::Validator;

/// Valid client counts, in a workload file (`clients`) and on the command line (`--clients`).
pub const CLIENTS: (i64, i64) = (1, 4096);

/// Valid run lengths, in a workload file (`duration`) and on the command line (`--duration`).
pub const RUN_DURATION: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(86_400));

/// Valid one-way latencies and jitters (`client_latency`, `client_jitter`, `peer_latency`,
/// `peer_jitter`, `--client-latency`, `--peer-latency`): a second each way is already past every recipe's request deadline.
pub const CLIENT_LATENCY: (Duration, Duration) = (Duration::ZERO, Duration::from_secs(1));

/// How operations are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Each client starts its next acquisition when the previous one (and its think time) ends.
    Closed,
    /// Acquisitions start on a fixed schedule of `rate_per_s` in total, whether or not earlier
    /// ones have finished; latency is measured from the scheduled start.
    Open { rate_per_s: f64 },
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this much time past the start (warm-up included).
    Duration(Duration),
    /// After this many acquisitions in total over all clients.
    Acquisitions(u64),
}

/// Thundering-herd rounds: every client waits at a barrier, all are released at once, each
/// takes the lock once; repeated `rounds` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stampede {
    /// How many times the barrier opens.
    pub rounds: u32,
}

/// Where a cell's lock clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientsAs {
    /// Tasks in the runner's own process (the default): cheapest, but no single client can be
    /// paused without pausing them all.
    Tasks,
    /// `lockbench worker` processes of `per_process` clients each, so one client process can
    /// be paused as a whole (SIGSTOP), its keep-alives, session heartbeats and renewal
    /// watchdogs with it: what a GC-pause fault needs.
    Processes {
        /// Clients per worker process (the last process may get fewer).
        per_process: u32,
    },
}

impl ClientsAs {
    /// The name used in workload files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ClientsAs::Tasks => "tasks",
            ClientsAs::Processes { .. } => "processes",
        }
    }
}

/// Where a workload was read from (its path, or a label such as `hot-lock` for the built-in
/// one), to name the file in errors found after reading it (the plan's). Not part of what the
/// workload is: the same workload read from two files compares equal.
#[derive(Debug, Clone, Default)]
pub struct Origin(pub String);

impl PartialEq for Origin {
    fn eq(&self, _: &Origin) -> bool {
        true
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated workload: every value is in range and every combination makes sense.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Name used in result folders and reports (defaults to the file stem).
    pub name: String,
    /// Concurrent lock clients.
    pub clients: u32,
    /// Number of distinct lock keys.
    pub keys: u32,
    /// How acquisitions spread over the keys.
    pub key_distribution: KeyDistribution,
    /// Time a holder keeps the lock before releasing.
    pub hold: DurationDist,
    /// Closed loop: pause after a release before the next acquire.
    pub think: DurationDist,
    /// Closed or open loop.
    pub arrival: Arrival,
    /// When the run ends.
    pub stop: Stop,
    /// Events before this point are excluded from the statistics.
    pub warmup: Duration,
    /// Lease TTL or session timeout given to the recipes.
    pub lease_ttl: Duration,
    /// Keep leases alive while held.
    pub renew: bool,
    /// Give up an acquisition after this long (recorded as a timeout).
    pub acquire_timeout: Duration,
    /// The backoff between two tries after a retryable error within one acquisition or
    /// clean-up (`retry_backoff`, doubling up to `retry_backoff_max`, with jitter).
    pub retry: crate::recipe::RetryPolicy,
    /// How long past its deadline an acquisition whose outcome is unknown keeps asking the
    /// cluster what became of it, before it is recorded as unknown (`info`): the drain.
    pub resolve_timeout: Duration,
    /// How often a waiter that has no wake-up to wait for tries again (`poll_interval`): the
    /// herd of MariaDB and Memcached, which have no notifications, polls at this pace.
    pub poll_interval: Duration,
    /// Waiting strategies to run, in order; `native` is only valid on etcd (checked by the plan).
    pub strategies: Vec<Strategy>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Barrier rounds instead of free-running clients.
    pub stampede: Option<Stampede>,
    /// Clients as tasks of the runner or as worker processes.
    pub clients_as: ClientsAs,
    /// Whether the protected register checks fencing tokens.
    pub resource: ResourceMode,
    /// The verdict each system × strategy is expected to get.
    pub expect: Expectations,
    /// Every N-th acquisition of each client crashes between the steps of a non-atomic acquire
    /// (`unsafe-setnx-expire`: after `SETNX`, before `PEXPIRE`), leaving what the first step
    /// wrote; 0 = never. Recipes whose acquire is one atomic step ignore it.
    pub crash_between_steps_every: u32,
    /// The kind of lock taken (`lock`, with its `read_ratio`, `permits` or `reentry_depth`);
    /// the plan skips a system whose recipes do not offer it.
    pub lock: LockKind,
    /// Latency added between every client and every server it talks to (`client_latency`,
    /// one way, each direction, plus up to `client_jitter` per chunk): the cell's clients
    /// connect through userspace relays ([`crate::latency`]) that hold each chunk this long.
    /// A round trip gains twice `base`. Zero (the default): no relays, clients connect
    /// directly.
    pub client_latency: crate::latency::Delay,
    /// Latency added between every two servers of the cluster (`peer_latency`, one way, each
    /// direction, plus up to `peer_jitter` per chunk): the cell runs on a cluster of its own
    /// whose containers relay every connection between nodes
    /// ([`crate::latency::transparent`]). Zero (the default): direct connections.
    pub peer_latency: crate::latency::Delay,
    /// The file it was read from, for errors.
    pub origin: Origin,
}

impl Workload {
    /// Reads and validates a workload file; the name defaults to the file stem.
    pub fn from_file(path: &Path) -> Result<Workload, SpecError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            origin: origin.clone(),
            source,
        })?;
        Workload::from_str(&text, &origin)
    }

    /// Parses and validates workload text; `origin` (a path or a label) names it in errors and
    /// gives the default name.
    #[allow(clippy::should_implement_trait)] // FromStr cannot carry the origin.
    pub fn from_str(text: &str, origin: &str) -> Result<Workload, SpecError> {
        let raw: RawWorkload = toml::from_str(text).map_err(|e| parse_error(origin, text, &e))?;
        Validator { origin }.workload(raw)
    }

    /// The verdict expected of `system` × `strategy` under this workload.
    pub fn expect_for(&self, system: System, strategy: Strategy) -> Expect {
        self.expect.of(system, strategy)
    }

    /// Open loop: when client `client`'s `n`-th acquisition (from 0) is due, counted from the
    /// run start. Clients take turns on one global schedule of `rate_per_s`, so the total rate
    /// is fixed whatever the number of clients. `None` in closed loop.
    pub fn intended_start(&self, client: u32, n: u64) -> Option<Duration> {
        match self.arrival {
            Arrival::Closed => None,
            Arrival::Open { rate_per_s } => {
                let slot = n as f64 * f64::from(self.clients) + f64::from(client);
                Some(Duration::from_secs_f64(slot / rate_per_s))
            }
        }
    }
}

/// Turns a toml error into one with line, column and, where it can be read, the field.
pub(crate) fn parse_error(origin: &str, text: &str, e: &toml::de::Error) -> SpecError {
    let (line, column) = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            (line, column)
        }
        None => (0, 0),
    };
    let message = e
        .message()
        .trim()
        .replace('`', "'")
        .replace("expected i64", "expected an integer");
    // Type errors do not say which key they are about; the line they point at does.
    let key = text
        .lines()
        .nth(line.wrapping_sub(1))
        .and_then(|l| l.split_once('='))
        .map(|(k, _)| k.trim().trim_matches('"'))
        .filter(|k| !k.is_empty() && !k.contains(' ') && !message.contains(&format!("'{k}'")));
    let message = match key {
        Some(k) => format!("field '{k}': {message}"),
        None => message,
    };
    SpecError::Parse {
        origin: origin.to_string(),
        line,
        column,
        message,
    }
}

#[cfg(test)]
mod tests;
