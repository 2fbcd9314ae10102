//! The `clock` fault, modelled: what a forward jump of one server's wall clock does to the locks
//! it holds, without touching any clock.
//!
//! Redis (with Sentinel, and each Redlock master) expires keys by its wall clock, so a jump of Δ
//! brings every expiry Δ closer: a key with `PTTL` ≤ Δ is gone, the others have Δ less to live.
//! Changing a container's clock is not possible here (containers share the host's clock, which
//! is never changed), and Debian's libfaketime 0.9.10 preloaded into Debian's redis-server stops
//! it at start-up, so the jump is modelled: one Lua script cuts the `PTTL` of every key under the
//! cell's key prefix by Δ, deleting those it expires. A fast clock repeats that every tick. Keys
//! without a TTL (fencing counters) are untouched, as a jump leaves them too. The recipes' queue
//! scripts also keep server-clock times of their own: each queue entry's deadline, `TIME` plus
//! a TTL, as a score in the lock's deadline set ([`LeaseClock::REDIS_DEADLINES_SUFFIX`]). A
//! jump brings those Δ closer too (the scripts compare them with a `TIME` that jumped), so the
//! same script lowers every score there by Δ; the next script that purges the queue drops the
//! entries whose deadline has passed, as it would after a real jump. What the model still
//! leaves out: the replicas see the cut as the master's `PEXPIRE`/`DEL`/`ZADD`.
//!
//! ZooKeeper sessions and etcd leases are timed with monotonic clocks: a wall-clock jump does
//! not shorten them, so the fault is accepted there and reported as [`ClockEffect::Monotonic`].

use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;

use crate::system::LeaseClock;

/// Deadline of one cut on one server (connect plus the script).
pub const CUT_TIMEOUT: Duration = Duration::from_secs(4);

/// How the clock of the targeted servers moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Skew {
    /// One jump forward by this much, when the fault starts. Ending it does not jump back: the
    /// keys it expired stay expired, as they would on a real server.
    Jump(Duration),
    /// A clock running fast: a jump of `jump` at the start and then every `every` until the
    /// fault ends (a clock running at `(every + jump) / every` times the real rate).
    Fast {
        /// Time between two jumps.
        every: Duration,
        /// The size of each jump.
        jump: Duration,
    },
}

impl Skew {
    /// The size of one jump.
    pub fn jump(self) -> Duration {
        match self {
            Skew::Jump(d) | Skew::Fast { jump: d, .. } => d,
        }
    }
}

/// Whether a fault does the real thing or a model of its effect (reported with the fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Realism {
    /// The fault happens to the servers as named (a kill, a pause, dropped packets).
    #[default]
    Real,
    /// The fault's effect is produced another way (a clock jump as TTLs cut by Δ).
    Modelled,
}

impl Realism {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Realism::Real => "real",
            Realism::Modelled => "modelled",
        }
    }
}

/// How a node's clock can be reached by the fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockAccess {
    /// A Redis server at `127.0.0.1:<port>` that expires keys by wall clock.
    Redis {
        /// Where this machine reaches it.
        endpoint: String,
    },
    /// A server whose leases run on monotonic time (ZooKeeper, etcd).
    Monotonic,
}

/// What one jump did on one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Cut {
    /// Keys whose remaining TTL was shortened.
    pub keys_cut: u64,
    /// Keys whose remaining TTL was at most the jump: deleted, as expired.
    pub keys_expired: u64,
    /// Queue-entry deadlines (scores of a lock's deadline set) brought the jump closer.
    pub deadlines_moved: u64,
}

impl Cut {
    fn add(&mut self, o: Cut) {
        self.keys_cut += o.keys_cut;
        self.keys_expired += o.keys_expired;
        self.deadlines_moved += o.deadlines_moved;
    }
}

/// What a clock fault did to one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "effect")]
pub enum ClockEffect {
    /// Modelled on a Redis server: the first jump's cut.
    Modelled(Cut),
    /// The node's leases use monotonic time: a wall-clock jump changes nothing.
    Monotonic,
    /// The server refused the cut (a Redis replica answers `READONLY`), or could not be reached:
    /// its keys kept their TTLs.
    Refused {
        /// The server's answer, or why it could not be asked.
        error: String,
    },
}

impl ClockEffect {
    /// What the model did on one node, in words for the history and the reports.
    pub fn describe(&self, node: &str) -> String {
        match self {
            ClockEffect::Modelled(c) => format!(
                "{node}: {} TTLs cut, {} keys expired, {} queue deadlines moved",
                c.keys_cut, c.keys_expired, c.deadlines_moved
            ),
            ClockEffect::Monotonic => format!("{node}: monotonic leases, nothing changed"),
            ClockEffect::Refused { error } => format!("{node}: refused ({error})"),
        }
    }
}

/// A clock fault that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    /// The key prefix is empty: the cut would reach keys of other cells.
    #[error("clock fault: the key prefix is empty; give the cell's key prefix")]
    NoPrefix,
    /// The node is a Redis replica, which refuses writes.
    #[error(
        "clock fault on {endpoint}: it is a replica and refuses the cut (READONLY); target the master (`leader`)"
    )]
    Replica {
        /// The replica's endpoint.
        endpoint: String,
    },
    /// The server could not be reached or the script failed.
    #[error("clock fault on {endpoint}: {error}")]
    Server {
        /// The server's endpoint.
        endpoint: String,
        /// What went wrong.
        error: String,
    },
}

/// Cuts every TTL under a glob pattern (`ARGV[1]`) by `ARGV[2]` ms; deletes keys with no more
/// than that left; lowers every score of the deadline sets there (keys ending with `ARGV[3]`)
/// by as much. `KEYS` rather than `SCAN`, so no key is visited (and cut) twice.
const CUT_SCRIPT: &str = r#"
local delta = tonumber(ARGV[2])
local suffix = ARGV[3]
local cut, expired, moved = 0, 0, 0
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  if k:sub(-#suffix) == suffix and redis.call('TYPE', k).ok == 'zset' then
    local entries = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
    for i = 1, #entries, 2 do
      redis.call('ZADD', k, 'XX', tonumber(entries[i + 1]) - delta, entries[i])
      moved = moved + 1
    end
  end
  local ttl = redis.call('PTTL', k)
  if ttl > 0 then
    if ttl <= delta then
      redis.call('DEL', k)
      expired = expired + 1
    else
      redis.call('PEXPIRE', k, ttl - delta)
      cut = cut + 1
    end
  end
end
return {cut, expired, moved}
"#;

static CUT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(CUT_SCRIPT));

/// The glob that matches exactly the keys under `prefix` (`prefix/…`, as the recipes lay keys
/// out), with the glob's special characters in the prefix escaped.
pub fn prefix_pattern(prefix: &str) -> Result<String, ClockError> {
    let p = prefix.trim_end_matches('/');
    if p.is_empty() {
        return Err(ClockError::NoPrefix);
    }
    let mut out = String::with_capacity(p.len() + 2);
    for c in p.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str("/*");
    Ok(out)
}

/// Jumps the clock of the Redis server at `endpoint` forward by `delta`, as far as the keys
/// under `prefix` can tell: every TTL there is cut by `delta` (modelled).
pub async fn jump(endpoint: &str, prefix: &str, delta: Duration) -> Result<Cut, ClockError> {
    let pattern = prefix_pattern(prefix)?;
    let server = |error: String| ClockError::Server {
        endpoint: endpoint.to_string(),
        error,
    };
    let client =
        redis::Client::open(format!("redis://{endpoint}/")).map_err(|e| server(e.to_string()))?;
    let cfg = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CUT_TIMEOUT / 2))
        .set_response_timeout(Some(CUT_TIMEOUT / 2));
    let run = async {
        let mut con = client
            .get_multiplexed_async_connection_with_config(&cfg)
            .await?;
        CUT.arg(pattern)
            .arg(delta.as_millis() as u64)
            .arg(LeaseClock::REDIS_DEADLINES_SUFFIX)
            .invoke_async::<(u64, u64, u64)>(&mut con)
            .await
    };
    match tokio::time::timeout(CUT_TIMEOUT, run).await {
        Err(_) => Err(server(format!("no answer within {CUT_TIMEOUT:?}"))),
        Ok(Err(e)) if e.to_string().contains("READONLY") => Err(ClockError::Replica {
            endpoint: endpoint.to_string(),
        }),
        Ok(Err(e)) => Err(server(e.to_string())),
        Ok(Ok((keys_cut, keys_expired, deadlines_moved))) => Ok(Cut {
            keys_cut,
            keys_expired,
            deadlines_moved,
        }),
    }
}

/// What the fast-clock tickers of a cell did after their first jump, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TickerTotals {
    /// Jumps applied (one per server per tick).
    pub jumps: u64,
    /// Their cuts, added up.
    pub cut: Cut,
    /// Jumps that failed (a server down or paused at that tick); the ticker goes on.
    pub failed: u64,
    /// The last failure, for the report.
    pub last_error: Option<String>,
}

/// A running fast clock: jumps its endpoints every tick until stopped (dropping it aborts it).
#[derive(Debug)]
pub struct Ticker {
    task: JoinHandle<()>,
    stop: tokio::sync::watch::Sender<bool>,
    endpoints: usize,
}

impl Ticker {
    /// Starts jumping each endpoint by `jump` every `every` (the first jump a tick from now:
    /// the fault's start made the one before), adding what it did to `totals`.
    pub fn spawn(
        endpoints: Vec<String>,
        prefix: String,
        every: Duration,
        jump: Duration,
        totals: Arc<Mutex<TickerTotals>>,
    ) -> Ticker {
        let every = every.max(Duration::from_millis(10));
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let count = endpoints.len();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                // A stop is only heard between jumps, so a jump the server ran is also counted.
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => return,
                }
                for ep in &endpoints {
                    let r = self::jump(ep, &prefix, jump).await;
                    let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
                    t.jumps += 1;
                    match r {
                        Ok(c) => t.cut.add(c),
                        Err(e) => {
                            t.failed += 1;
                            t.last_error = Some(e.to_string());
                        }
                    }
                }
            }
        });
        Ticker {
            task,
            stop,
            endpoints: count,
        }
    }

    /// Stops the clock running fast: no jump starts after this returns. A jump in flight is let
    /// finish (and counted), within its deadline; past that the task is aborted.
    pub async fn stop(&self) {
        let _ = self.stop.send(true);
        let limit = tokio::time::Instant::now() + CUT_TIMEOUT * (self.endpoints.max(1) as u32);
        while !self.task.is_finished() && tokio::time::Instant::now() < limit {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.task.abort();
    }

    /// True until the ticker has stopped.
    pub fn is_running(&self) -> bool {
        !self.task.is_finished()
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_matches_only_under_the_prefix() {
        assert_eq!(prefix_pattern("lb/cell1/").unwrap(), "lb/cell1/*");
        assert_eq!(
            prefix_pattern("a*b?[c]\\").unwrap(),
            "a\\*b\\?\\[c\\]\\\\/*"
        );
        assert_eq!(prefix_pattern("/"), Err(ClockError::NoPrefix));
        assert_eq!(
            Skew::Fast {
                every: Duration::from_secs(1),
                jump: Duration::from_millis(500)
            }
            .jump(),
            Duration::from_millis(500)
        );
    }

    #[tokio::test]
    async fn an_unreachable_server_is_an_error_within_the_deadline() {
        // Port 1 on loopback refuses at once: the error names the endpoint.
        let e = jump("127.0.0.1:1", "lb/x", Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("127.0.0.1:1"), "{e}");
    }

    #[tokio::test]
    async fn a_ticker_counts_failed_jumps_and_stops() {
        let totals = Arc::new(Mutex::new(TickerTotals::default()));
        let t = Ticker::spawn(
            vec!["127.0.0.1:1".into()],
            "lb/x".into(),
            Duration::from_millis(20),
            Duration::from_secs(1),
            totals.clone(),
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(t.is_running());
        t.stop().await;
        assert!(!t.is_running());
        let seen = totals.lock().unwrap().clone();
        assert!(seen.failed >= 2, "{seen:?}");
        assert_eq!(seen.jumps, seen.failed);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            totals.lock().unwrap().jumps,
            seen.jumps,
            "no jump after stop"
        );
    }
}
