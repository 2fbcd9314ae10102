//! MariaDB `GET_LOCK`: named locks that belong to a session (one connection). One client is one
//! connection, to whichever server takes writes (the endpoints are tried in turn); the lock
//! lives as long as that session, and ends with it, whichever way it ends.
//!
//! - `native`: `GET_LOCK(name, timeout)`, the server's own wait, with the time left until the
//!   deadline (in seconds, fractions allowed). The server wakes its waiters, so the client sees
//!   no wake-ups ([`Tally::hide_wakeups`]).
//! - `herd`: `GET_LOCK(name, 0)` polled every `poll_interval` until the deadline: MariaDB has no
//!   notification a client could wait on, so every poll is a wake-up and a request.
//! - No `predecessor`: a waiter cannot watch the one before it. MariaDB has no per-waiter
//!   notification channel (no watches, no pub/sub, no `LISTEN`); a queue would need a table of
//!   tickets that each waiter polls, which is the herd again with one more write per grant.
//!
//! Fencing: `NEXTVAL(lockbench_fence)`, a sequence without a cache (`NOCACHE`: each value is a
//! replicated write, so a promoted replica continues above the values it received), taken after
//! the grant. Loss: a heartbeat every ttl/3 asks `IS_USED_LOCK(name) = CONNECTION_ID()` on the
//! holding connection; an error, no answer within `request_timeout`, or a lock no longer ours
//! fires the lease's [`LostSignal`]. The session's `wait_timeout` is set to the TTL, meant to end
//! a session cut off from its client (a partition) after a TTL without a request; that is not
//! shown: under `chaos/pause-clients.toml` (`held-locks`, 10 s TTL) the stopped holder's session
//! kept its lock through the whole 15 s pause, and the next grant came at the thawed release.
//! Without `renew` the lease is told lost a TTL after the grant, as the server may then end the
//! session.
//!
//! Release: `RELEASE_LOCK(name)` is 1 only for the session that holds it (0 when another does,
//! NULL when nobody does: both are [`LockError::Lost`]); a lease from a connection since replaced
//! releases nothing. If the connection breaks mid-acquire, its session and any lock it got are
//! gone: the client reconnects and tries again within the deadline, or answers
//! [`LockError::Withdrawn`]. Lock names longer than MariaDB's 64 characters are hashed.
//!
//! `unsafe-shared-session` (unsafe, for calibration): the herd's polling `GET_LOCK(name, 0)`
//! on a connection every client of this process with the same servers and prefix shares, as
//! a connection pool of one would hand it out. The session owns the lock, not the client, and
//! a session may take a lock it holds again (`GET_LOCK` nests since MariaDB 10.0.2): the second
//! client is granted while the first holds, and the owner check on release (`RELEASE_LOCK` is 1
//! for the holding session) cannot tell the two apart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::Conn;
use mysql_async::prelude::Queryable;
use sha2::{Digest, Sha256};

use super::provider::{CLIENT_USER, DATABASE, opts};
use crate::recipe::retry::Backoff;
use crate::recipe::{
    Claim, Lease, LockError, LostSignal, LostTrigger, Recipe, RecipeConfig, Strategy, Tally,
    check_strategy, exclusive_only, own_handle,
};
use crate::system::System;

/// The longest lock name MariaDB documents for `GET_LOCK`.
pub const MAX_LOCK_NAME: usize = 64;

/// The fencing sequence every client shares.
const FENCE: &str = "lockbench_fence";

/// The lock name of `key` under `prefix`: `<prefix>/<key>`, or when that is longer than
/// [`MAX_LOCK_NAME`], `lbh:` and the first 60 hex digits of its SHA-256 (distinct names stay
/// distinct but for a hash collision).
pub fn lock_name(prefix: &str, key: &str) -> String {
    let full = format!("{prefix}/{key}");
    if full.len() <= MAX_LOCK_NAME {
        return full;
    }
    let digest = Sha256::digest(full.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("lbh:{}", &hex[..MAX_LOCK_NAME - 4])
}

/// A MariaDB `GET_LOCK` client: one connection to the primary.
pub struct MariadbRecipe {
    endpoints: Vec<String>,
    config: RecipeConfig,
    /// This client's own connection.
    own: Arc<tokio::sync::Mutex<Slot>>,
    /// The process-wide connection `unsafe-shared-session` uses, once it has been asked for.
    pooled: std::sync::OnceLock<Arc<tokio::sync::Mutex<Slot>>>,
}

/// The connections `unsafe-shared-session` clients share, by servers and prefix: one per cell
/// in this process, dropped with its last client.
static POOL: std::sync::Mutex<Vec<(String, std::sync::Weak<tokio::sync::Mutex<Slot>>)>> =
    std::sync::Mutex::new(Vec::new());

/// The shared connection of `endpoints` and `prefix`, made on first use.
fn pooled_slot(endpoints: &[String], prefix: &str) -> Arc<tokio::sync::Mutex<Slot>> {
    use crate::sync::LockUnpoisoned;
    let key = format!("{}|{prefix}", endpoints.join(","));
    let mut pool = POOL.locked();
    pool.retain(|(_, w)| w.strong_count() > 0);
    if let Some(slot) = pool
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, w)| w.upgrade())
    {
        return slot;
    }
    let slot = Arc::new(tokio::sync::Mutex::new(Slot::empty()));
    pool.push((key, Arc::downgrade(&slot)));
    slot
}

/// The connection and what lives on it.
struct Slot {
    conn: Option<Conn>,
    /// Counts the connections this client opened: a lease names the one it was granted on.
    generation: u64,
    /// When the connection last ran a request (the server ends it after `wait_timeout` idle).
    last_used: Instant,
    /// The loss triggers of the leases held on this connection, by lease number.
    held: Vec<(u64, LostTrigger)>,
    /// The number the next lease granted on this slot gets.
    next_lease: u64,
}

impl Slot {
    fn empty() -> Slot {
        Slot {
            conn: None,
            generation: 0,
            last_used: Instant::now(),
            held: Vec::new(),
            next_lease: 0,
        }
    }

    /// The connection broke or was given up: its session and every lock on it are gone (or
    /// will be, when the server notices). Its leases are told.
    fn broken(&mut self) {
        self.conn = None;
        for (_, t) in self.held.drain(..) {
            t.fire();
        }
    }

    fn forget(&mut self, lease: u64) {
        if let Some(i) = self.held.iter().position(|(n, _)| *n == lease) {
            self.held.swap_remove(i);
        }
    }
}

/// What `release` needs.
struct Handle {
    name: String,
    /// The connection slot it was granted on, and its number there.
    slot: Arc<tokio::sync::Mutex<Slot>>,
    lease: u64,
    /// The [`Slot::generation`] of the connection that holds it.
    generation: u64,
    /// Stops the heartbeat (also when the lease is dropped unreleased).
    stop: tokio::sync::watch::Sender<bool>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// What one request's failure means for the connection.
enum Failure {
    /// The server answered with an error; the connection still works.
    Refused(String),
    /// The connection broke or the request went unanswered: the session is (or will be) gone.
    Broken(String),
}

fn failure(e: mysql_async::Error) -> Failure {
    match &e {
        // Killed sessions and a server shutting down also end the connection.
        mysql_async::Error::Server(s) if ![1053, 1927, 1152].contains(&s.code) => {
            Failure::Refused(format!("{} ({})", s.message, s.code))
        }
        _ => Failure::Broken(e.to_string()),
    }
}

/// Runs `q` on `conn` within `limit`.
async fn within<T>(
    limit: Duration,
    q: impl std::future::Future<Output = Result<T, mysql_async::Error>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(limit, q).await {
        Ok(r) => r.map_err(failure),
        Err(_) => Err(Failure::Broken(format!("no answer within {limit:?}"))),
    }
}

/// How an acquisition attempt on one connection ended.
enum Got {
    Granted(u64),
    TimedOut,
}

impl MariadbRecipe {
    /// A client of the servers at `endpoints` (`host:port` each); connects to the writable one
    /// by `deadline`, so a bad address or a cluster without a primary shows at once.
    pub async fn connect(
        endpoints: Vec<String>,
        config: RecipeConfig,
        deadline: Instant,
    ) -> Result<Self, LockError> {
        let recipe = MariadbRecipe {
            endpoints,
            config,
            own: Arc::new(tokio::sync::Mutex::new(Slot::empty())),
            pooled: std::sync::OnceLock::new(),
        };
        {
            let mut slot = recipe.own.lock().await;
            recipe.ensure(&mut slot, deadline).await?;
        }
        Ok(recipe)
    }

    /// The connection `strategy` acquires on: the process-wide shared one for
    /// `unsafe-shared-session`, else this client's own.
    fn slot_for(&self, strategy: Strategy) -> Arc<tokio::sync::Mutex<Slot>> {
        if strategy == Strategy::UnsafeSharedSession {
            self.pooled
                .get_or_init(|| pooled_slot(&self.endpoints, &self.config.prefix))
                .clone()
        } else {
            self.own.clone()
        }
    }

    /// `wait_timeout` of the session: the TTL, whole seconds, at least 1.
    fn wait_timeout(&self) -> usize {
        self.config.ttl.as_secs_f64().ceil().max(1.0) as usize
    }

    /// A live connection in `slot`: the one there unless it sat idle long enough for the server
    /// to end it, else a new one to the first writable server, retrying with backoff until
    /// `deadline` ([`LockError::Unavailable`] then: nothing was sent).
    async fn ensure(&self, slot: &mut Slot, deadline: Instant) -> Result<(), LockError> {
        let stale = self.config.ttl.mul_f64(0.75);
        if slot.conn.is_some() && slot.held.is_empty() && slot.last_used.elapsed() >= stale {
            slot.conn = None;
        }
        if slot.conn.is_some() {
            return Ok(());
        }
        let mut backoff = Backoff::new(self.config.retry);
        loop {
            let mut why = Vec::new();
            for e in &self.endpoints {
                match self.open(e, deadline).await {
                    Ok(conn) => {
                        slot.conn = Some(conn);
                        slot.generation += 1;
                        slot.last_used = Instant::now();
                        slot.held.clear();
                        return Ok(());
                    }
                    Err(w) => why.push(format!("{e}: {w}")),
                }
            }
            let err = LockError::Unavailable(format!(
                "no MariaDB server takes writes: {}",
                why.join("; ")
            ));
            if !backoff.wait(deadline).await {
                return Err(err);
            }
        }
    }

    /// A connection to `endpoint` if it takes writes (`@@read_only = 0`), with the fencing
    /// sequence made.
    async fn open(&self, endpoint: &str, deadline: Instant) -> Result<Conn, String> {
        let limit = self
            .config
            .request_timeout
            .min(deadline.saturating_duration_since(Instant::now()))
            .max(Duration::from_millis(50));
        let o = mysql_async::OptsBuilder::from_opts(opts(endpoint, CLIENT_USER, Some(DATABASE))?)
            .wait_timeout(Some(self.wait_timeout()));
        let mut conn = tokio::time::timeout(limit, mysql_async::Conn::new(o))
            .await
            .map_err(|_| format!("no connection within {limit:?}"))?
            .map_err(|e| e.to_string())?;
        let ro: Option<i64> = within(limit, conn.query_first("SELECT @@read_only"))
            .await
            .map_err(|f| match f {
                Failure::Refused(w) | Failure::Broken(w) => w,
            })?;
        if ro != Some(0) {
            return Err("read-only (a replica)".into());
        }
        within(
            limit,
            conn.query_drop(format!("CREATE SEQUENCE IF NOT EXISTS {FENCE} NOCACHE")),
        )
        .await
        .map_err(|f| match f {
            Failure::Refused(w) | Failure::Broken(w) => {
                format!("creating the fencing sequence: {w}")
            }
        })?;
        Ok(conn)
    }

    /// One attempt on the live connection: the strategy's wait, then the fencing token.
    async fn attempt(
        &self,
        conn: &mut Conn,
        name: &str,
        strategy: Strategy,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Got, Failure> {
        let rt = self.config.request_timeout;
        let got: Option<i64> = match strategy {
            Strategy::Native => {
                let left = deadline.saturating_duration_since(Instant::now());
                tally.requests(1);
                within(
                    left + rt,
                    conn.exec_first("SELECT GET_LOCK(?, ?)", (name, left.as_secs_f64())),
                )
                .await?
                .flatten()
            }
            _ => loop {
                tally.requests(1);
                let r: Option<i64> = within(rt, conn.exec_first("SELECT GET_LOCK(?, 0)", (name,)))
                    .await?
                    .flatten();
                if r != Some(0) {
                    break r;
                }
                let next = Instant::now() + self.config.poll_interval;
                if next >= deadline {
                    break Some(0);
                }
                tokio::time::sleep_until(next.into()).await;
                tally.wakeups(1);
            },
        };
        match got {
            Some(1) => {}
            Some(0) => return Ok(Got::TimedOut),
            other => {
                return Err(Failure::Refused(format!(
                    "GET_LOCK answered {other:?} (NULL: an error on the server)"
                )));
            }
        }
        tally.requests(1);
        let token: Option<u64> = within(rt, conn.query_first(format!("SELECT NEXTVAL({FENCE})")))
            .await?
            .flatten();
        token
            .map(Got::Granted)
            .ok_or_else(|| Failure::Refused("NEXTVAL of the fencing sequence answered NULL".into()))
    }

    /// The heartbeat of a lease on connection `generation` (see the module doc).
    fn watch(
        &self,
        (name, lease, generation): (String, u64, u64),
        shared: Arc<tokio::sync::Mutex<Slot>>,
        trigger: LostTrigger,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let ttl = self.config.ttl;
        let renew = self.config.renew;
        let rt = self.config.request_timeout;
        tokio::spawn(async move {
            if !renew {
                // The session may end a TTL after its last request: tell the holder then.
                tokio::select! {
                    _ = tokio::time::sleep(ttl) => trigger.fire(),
                    _ = stop.wait_for(|s| *s) => {}
                }
                return;
            }
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(ttl / 3) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                // A busy connection (a release under way) skips a beat: whoever has it sees
                // its errors.
                let Ok(mut slot) = tokio::time::timeout(rt, shared.lock()).await else {
                    continue;
                };
                if *stop.borrow() {
                    return;
                }
                if slot.generation != generation || slot.conn.is_none() {
                    trigger.fire();
                    return;
                }
                let conn = slot.conn.as_mut().expect("checked above");
                let r: Result<Option<Option<i64>>, Failure> = within(
                    rt,
                    conn.exec_first("SELECT IS_USED_LOCK(?) = CONNECTION_ID()", (name.as_str(),)),
                )
                .await;
                match r {
                    Ok(Some(Some(1))) => slot.last_used = Instant::now(),
                    Ok(_) | Err(Failure::Refused(_)) => {
                        slot.forget(lease);
                        trigger.fire();
                        return;
                    }
                    Err(Failure::Broken(_)) => {
                        slot.broken();
                        trigger.fire();
                        return;
                    }
                }
            }
        });
    }
}

impl Recipe for MariadbRecipe {
    fn system(&self) -> System {
        System::Mariadb
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        exclusive_only(System::Mariadb, claim)?;
        check_strategy(System::Mariadb, strategy)?;
        if strategy == Strategy::Native {
            tally.hide_wakeups();
        }
        let name = lock_name(&self.config.prefix, key);
        let started = Instant::now();
        let timeout = || LockError::Timeout {
            key: key.to_string(),
            waited: started.elapsed(),
        };
        let mut backoff = Backoff::new(self.config.retry);
        let mut broke: Option<String> = None;
        let cell = self.slot_for(strategy);
        loop {
            let mut slot = cell.lock().await;
            match self.ensure(&mut slot, deadline).await {
                Ok(()) => {}
                // Nothing is left of an attempt whose connection broke.
                Err(e) => {
                    return Err(match broke {
                        Some(why) => LockError::Withdrawn {
                            key: key.to_string(),
                            why: format!("{why}; then {e}"),
                        },
                        None => e,
                    });
                }
            }
            let generation = slot.generation;
            let conn = slot.conn.as_mut().expect("ensure left a connection");
            let r = self.attempt(conn, &name, strategy, deadline, tally).await;
            slot.last_used = Instant::now();
            match r {
                Ok(Got::Granted(token)) => {
                    let (trigger, lost) = LostSignal::new();
                    let lease = slot.next_lease;
                    slot.next_lease += 1;
                    slot.held.push((lease, trigger.clone()));
                    drop(slot);
                    let (stop, stop_rx) = tokio::sync::watch::channel(false);
                    self.watch(
                        (name.clone(), lease, generation),
                        cell.clone(),
                        trigger,
                        stop_rx,
                    );
                    return Ok(Lease {
                        key: key.to_string(),
                        token,
                        acquired_at: Instant::now(),
                        ttl: self.config.ttl,
                        ttl_spent: Duration::ZERO,
                        wakeups: tally.wakeup_count(),
                        requests: tally.request_count(),
                        fallback_polls: 0,
                        queue_position: None,
                        lost,
                        handle: Box::new(Handle {
                            name,
                            slot: cell,
                            lease,
                            generation,
                            stop,
                        }),
                    });
                }
                Ok(Got::TimedOut) => {
                    return Err(match broke {
                        Some(why) => LockError::Withdrawn {
                            key: key.to_string(),
                            why,
                        },
                        None => timeout(),
                    });
                }
                Err(Failure::Refused(why)) => {
                    // Whatever it was, we hold nothing now: give back a lock the failed token
                    // request left (the session may hold it).
                    let conn = slot.conn.as_mut().expect("still there");
                    let rt = self.config.request_timeout;
                    if within(rt, conn.exec_drop("DO RELEASE_LOCK(?)", (name.as_str(),)))
                        .await
                        .is_err()
                    {
                        slot.broken();
                    }
                    return Err(LockError::Server(format!("acquiring '{key}': {why}")));
                }
                Err(Failure::Broken(why)) => {
                    slot.broken();
                    drop(slot);
                    broke = Some(format!(
                        "the connection broke mid-acquire ({why}): its session, and any lock \
                         it got, ended with it"
                    ));
                    if Instant::now() >= deadline || !backoff.wait(deadline).await {
                        return Err(LockError::Withdrawn {
                            key: key.to_string(),
                            why: broke.unwrap_or_default(),
                        });
                    }
                }
            }
        }
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let key = lease.key.clone();
        let handle = own_handle::<Handle>(lease.handle, &key, System::Mariadb)?;
        handle.stop.send_replace(true);
        let lost = |why: &str| LockError::Lost {
            key: key.clone(),
            why: why.to_string(),
        };
        let rt = self.config.request_timeout;
        let Ok(mut slot) = tokio::time::timeout(rt, handle.slot.lock()).await else {
            return Err(LockError::Connection(format!(
                "releasing '{key}': the connection stayed busy for {rt:?}"
            )));
        };
        slot.forget(handle.lease);
        if slot.generation != handle.generation || slot.conn.is_none() {
            return Err(lost(
                "the connection that held it has ended, and the server released it with its \
                 session",
            ));
        }
        let conn = slot.conn.as_mut().expect("checked above");
        let r: Result<Option<Option<i64>>, Failure> = within(
            rt,
            conn.exec_first("SELECT RELEASE_LOCK(?)", (handle.name.as_str(),)),
        )
        .await;
        slot.last_used = Instant::now();
        match r {
            Ok(Some(Some(1))) => Ok(()),
            Ok(Some(Some(0))) => Err(lost("another session holds it")),
            Ok(_) => Err(lost("nobody holds it")),
            Err(Failure::Refused(why)) => {
                Err(LockError::Server(format!("releasing '{key}': {why}")))
            }
            Err(Failure::Broken(why)) => {
                slot.broken();
                Err(LockError::Connection(format!(
                    "releasing '{key}': {why}; the connection is dropped, and its session's \
                     locks end with it"
                )))
            }
        }
    }

    async fn crash(self) {
        // Dropped, not closed by a release: the server ends the session and its locks (a
        // shared session too: it dies with the process that held it).
        for cell in std::iter::once(&self.own).chain(self.pooled.get()) {
            let mut slot = cell.lock().await;
            slot.conn = None;
            slot.generation += 1;
            slot.held.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_kept_and_long_ones_hashed_to_64() {
        assert_eq!(lock_name("/lb", "k1"), "/lb/k1");
        let exact = "x".repeat(MAX_LOCK_NAME - 4);
        assert_eq!(lock_name("/lb", &exact).len(), MAX_LOCK_NAME);
        assert_eq!(lock_name("/lb", &exact), format!("/lb/{exact}"));
        let long = "y".repeat(200);
        let h = lock_name("/lockbench/run-1/cell-2", &long);
        assert_eq!(h.len(), MAX_LOCK_NAME);
        assert!(h.starts_with("lbh:"));
        assert_eq!(
            h,
            lock_name("/lockbench/run-1/cell-2", &long),
            "deterministic"
        );
        assert_ne!(h, lock_name("/lockbench/run-1/cell-3", &long), "distinct");
        assert_ne!(
            lock_name("/p", &format!("{long}a")),
            lock_name("/p", &format!("{long}b"))
        );
    }

    #[test]
    fn names_one_over_the_limit_are_hashed() {
        let k = "z".repeat(MAX_LOCK_NAME - 3);
        assert_eq!(format!("/lb/{k}").len(), MAX_LOCK_NAME + 1);
        assert!(lock_name("/lb", &k).starts_with("lbh:"));
    }

    #[test]
    fn killed_sessions_break_the_connection_other_refusals_do_not() {
        let server = |code| {
            mysql_async::Error::Server(mysql_async::ServerError {
                code,
                message: "m".into(),
                state: "HY000".into(),
            })
        };
        assert!(matches!(failure(server(1290)), Failure::Refused(_)));
        assert!(matches!(failure(server(1927)), Failure::Broken(_)));
        let io = mysql_async::Error::Io(mysql_async::IoError::Io(std::io::Error::other("reset")));
        assert!(matches!(failure(io), Failure::Broken(_)));
    }
}
