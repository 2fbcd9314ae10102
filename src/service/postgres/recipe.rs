//! The PostgreSQL advisory-lock recipe: one client is one session on the primary (found by
//! asking every endpoint in turn for `pg_is_in_recovery() = false`), and a lock is a session
//! advisory lock on a 64-bit key hashed client-side from the prefix and the key ([`lock_key`]).
//!
//! - **native**: `pg_advisory_lock(k)` under `lock_timeout` (the time left to the deadline): the
//!   server queues the waiters and wakes them itself, so the wake-ups are hidden.
//! - **herd**: `pg_try_advisory_lock(k)`; a waiter that fails `LISTEN`s on the key's channel and
//!   tries again on every notification (or after `fallback_poll`); a release unlocks and
//!   `pg_notify`s that channel in one statement, so every waiter wakes and races again.
//! - **predecessor**: a ticket in `lockbench_queue` (one row per waiter, with its backend pid
//!   and start time; drawn under a per-key queue lock, so tickets commit in order); a waiter listens on its own channel `lbq_<ticket>` and takes the advisory
//!   lock when no row with a smaller ticket for the key belongs to a live session (checked
//!   against `pg_stat_activity`, and the dead sessions' rows deleted on the way). A release
//!   unlocks, deletes its row and notifies only its successor, the first waiter whose session
//!   is alive (one that dies between that check and the notification is covered by the fallback
//!   poll of the waiter behind it). The lock is still the advisory lock, so it stays bound to
//!   the session.
//!
//! The fencing token is `nextval('lockbench_fence')`, drawn in the statement that takes the
//! lock, after the grant. While a lock is held a heartbeat asks every `ttl / 3` whether the
//! session still holds it (`pg_locks`), within `request_timeout`; an error, no answer or a lock
//! no longer ours fires the lost signal (and closes the session), as does the connection ending. A connection that breaks
//! mid-acquire ends the session and any lock it got: the session is closed, the acquisition is
//! [`LockError::Withdrawn`], and the next call connects again. A release only unlocks on the
//! session that took the lock (a lease from a replaced connection is [`LockError::Lost`]), and
//! `pg_advisory_unlock` answers false when the session no longer holds it.
//!
//! One session serves one acquisition at a time well: a native wait blocks its connection, so
//! the heartbeats of other leases of the same client queue behind it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::session::{Session, Shared};
use crate::recipe::retry::Backoff;
use crate::recipe::{
    Claim, Lease, LockError, LostSignal, LostTrigger, Recipe, RecipeConfig, Strategy, Tally,
    check_strategy, exclusive_only, own_handle,
};
use crate::system::System;

/// The advisory-lock key of `key` under `prefix`: FNV-1a (64 bits) of `prefix`, a NUL byte and
/// `key`, as the signed `bigint` the server takes. Stable across processes and versions.
pub(crate) fn lock_key(prefix: &str, key: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in prefix.bytes().chain([0u8]).chain(key.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

/// The herd's channel for key `k`.
pub(crate) fn key_channel(k: i64) -> String {
    format!("lbk_{:016x}", k as u64)
}

/// A predecessor waiter's own channel.
pub(crate) fn ticket_channel(ticket: i64) -> String {
    format!("lbq_{ticket}")
}

/// Native: waits up to `wait_ms` on the server for the lock, then draws the token.
pub(crate) fn native_sql(k: i64, wait_ms: u64) -> String {
    format!(
        "SET lock_timeout = {}; \
         SELECT nextval('lockbench_fence') FROM (SELECT pg_advisory_lock({k}) OFFSET 0) s; \
         RESET lock_timeout",
        wait_ms.max(1)
    )
}

/// One try: the token when the lock was free, else 0.
pub(crate) fn try_sql(k: i64) -> String {
    format!("SELECT CASE WHEN pg_try_advisory_lock({k}) THEN nextval('lockbench_fence') ELSE 0 END")
}

/// Queues a predecessor waiter: its ticket.
///
/// The ticket is drawn under the key's queue lock, a transaction advisory lock on the same 64
/// bits in the two-`int4` key space (apart from the lock itself), held to the commit: a ticket
/// is drawn from the sequence when the row is formed but seen at the commit, so without it two
/// waiters enqueuing at once could commit out of ticket order, and the later ticket, finding
/// no row ahead, would be granted before the earlier one (and the earlier one, behind the holder
/// it preceded, would hear no release: only tickets after the holder's are notified). With it,
/// every smaller ticket of the key is committed before a larger one is drawn.
pub(crate) fn enqueue_sql(k: i64) -> String {
    let (hi, lo) = ((k >> 32) as i32, k as i32);
    format!(
        "WITH queue_turn AS MATERIALIZED (SELECT pg_advisory_xact_lock({hi}, {lo})) \
         INSERT INTO lockbench_queue (k, pid, started) SELECT {k}, a.pid, a.backend_start \
         FROM queue_turn, pg_stat_activity a WHERE a.pid = pg_backend_pid() RETURNING ticket"
    )
}

/// The predecessor's turn check: deletes dead sessions' rows ahead of `ticket`, and when no
/// live one is left ahead tries the lock: the token, 0 while a live waiter is ahead, -1 when
/// first but the lock is still held (a session ending, or a client outside the queue).
pub(crate) fn turn_sql(k: i64, ticket: i64) -> String {
    let live = LIVE;
    format!(
        "WITH dead AS (DELETE FROM lockbench_queue q WHERE q.k = {k} AND q.ticket < {ticket} \
         AND NOT {live}) \
         SELECT CASE WHEN EXISTS (SELECT 1 FROM lockbench_queue q WHERE q.k = {k} \
         AND q.ticket < {ticket} AND {live}) THEN 0 \
         WHEN pg_try_advisory_lock({k}) THEN nextval('lockbench_fence') ELSE -1 END"
    )
}

/// A queue row `q` whose session is alive (the same pid started at the same time: a pid the
/// server reused is not the waiter's).
const LIVE: &str = "EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = q.pid \
                    AND a.backend_start = q.started)";

/// Unlocks (if `unlock`), deletes the row of `ticket` and notifies the next live waiter on the
/// key (a dead one's row is left for the waiters behind it to delete). The notification goes
/// out at commit, after the unlock and the deletion.
pub(crate) fn dequeue_sql(k: i64, ticket: i64, unlock: bool) -> String {
    let unlocked = if unlock {
        format!("pg_advisory_unlock({k})")
    } else {
        "true".to_string()
    };
    format!(
        "WITH mine AS (DELETE FROM lockbench_queue WHERE ticket = {ticket}) \
         SELECT {unlocked}, (SELECT pg_notify('lbq_' || q.ticket, '') FROM lockbench_queue q \
         WHERE q.k = {k} AND q.ticket > {ticket} AND {LIVE} ORDER BY q.ticket LIMIT 1)"
    )
}

/// Whether this session holds the advisory lock on `k` (a bigint key shows in `pg_locks` as
/// `classid` = high 32 bits, `objid` = low 32 bits, `objsubid` = 1).
pub(crate) fn holds_sql(k: i64) -> String {
    format!(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
         AND pid = pg_backend_pid() AND objsubid = 1 \
         AND ((classid::bigint << 32) | objid::bigint) = {k}"
    )
}

/// What a release must do besides unlocking.
#[derive(Debug, Clone)]
enum Held {
    Native,
    Herd,
    Predecessor { ticket: i64 },
}

/// The release state of a lease.
struct PgHandle {
    k: i64,
    serial: u64,
    pid: i32,
    held: Held,
    /// Ends the heartbeat when the lease is released or dropped.
    _heartbeat: AbortOnDrop,
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Why an acquisition step did not go on.
enum Fail {
    /// The session is unusable (connection ended, no answer): close it, the attempt withdraws.
    Broken(String),
    /// An answer that ends the attempt as it is.
    Lock(LockError),
}

/// A granted lock, before it becomes a lease.
struct Grant {
    token: i64,
    held: Held,
    queue_position: Option<u64>,
}

/// A PostgreSQL advisory-lock client: one session on the primary at a time.
pub struct PostgresRecipe {
    cfg: RecipeConfig,
    endpoints: Vec<String>,
    /// The endpoint tried first (the last one that was the primary).
    preferred: AtomicUsize,
    serials: AtomicU64,
    session: tokio::sync::Mutex<Option<Shared>>,
}

impl PostgresRecipe {
    /// Connects to whichever of `endpoints` takes writes, by `deadline`.
    pub async fn connect(
        endpoints: Vec<String>,
        cfg: RecipeConfig,
        deadline: Instant,
    ) -> Result<PostgresRecipe, LockError> {
        if endpoints.is_empty() {
            return Err(LockError::Unavailable("no postgres endpoint given".into()));
        }
        let recipe = PostgresRecipe {
            cfg,
            endpoints,
            preferred: AtomicUsize::new(0),
            serials: AtomicU64::new(0),
            session: tokio::sync::Mutex::new(None),
        };
        recipe.session(deadline).await?;
        Ok(recipe)
    }

    /// The live session, connecting (to the endpoint that is not in recovery, trying them in
    /// turn with backoff) when there is none; by `deadline`, at least one round of tries.
    async fn session(&self, deadline: Instant) -> Result<Shared, LockError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref() {
            if !s.is_broken() {
                return Ok(s.clone());
            }
            s.close();
            *slot = None;
        }
        let deadline = deadline.max(Instant::now() + self.cfg.request_timeout);
        let mut backoff = Backoff::new(self.cfg.retry);
        let n = self.endpoints.len();
        loop {
            let mut why = Vec::new();
            let first = self.preferred.load(Ordering::Relaxed);
            for i in (0..n).map(|j| (first + j) % n) {
                let serial = self.serials.fetch_add(1, Ordering::Relaxed) + 1;
                match Session::open(
                    &self.endpoints[i],
                    serial,
                    self.cfg.request_timeout,
                    deadline,
                )
                .await
                {
                    Ok(s) => {
                        self.preferred.store(i, Ordering::Relaxed);
                        let s = Arc::new(s);
                        *slot = Some(s.clone());
                        return Ok(s);
                    }
                    Err(e) => why.push(e),
                }
            }
            if !backoff.wait(deadline).await {
                return Err(LockError::Unavailable(format!(
                    "no postgres server takes writes: {}",
                    why.join("; ")
                )));
            }
        }
    }

    /// Closes `session` if it is still the current one (the next call connects again).
    async fn drop_session(&self, session: &Shared) {
        session.close();
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            *slot = None;
        }
    }

    /// One request within `request_timeout` (and the deadline, when given): the rows' first
    /// column. A server error (SQLSTATE) is an answer; anything else breaks the session.
    async fn ask(
        &self,
        s: &Session,
        sql: &str,
        tally: &Tally,
        limit: Option<Duration>,
    ) -> Result<Vec<String>, Fail> {
        tally.requests(1);
        let limit = limit.unwrap_or(self.cfg.request_timeout);
        let run = tokio::time::timeout(limit, s.client.simple_query(sql)).await;
        match run {
            Err(_) => Err(Fail::Broken(format!(
                "{}: no answer within {limit:?}",
                s.endpoint
            ))),
            Ok(Err(e)) => match e.as_db_error() {
                Some(db) if !s.is_broken() && !ends_session(db.code().code()) => {
                    Err(Fail::Lock(server_error(db)))
                }
                _ => Err(Fail::Broken(format!(
                    "{}: {}",
                    s.endpoint,
                    super::provider::describe(&e)
                ))),
            },
            Ok(Ok(msgs)) => Ok(msgs
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some(r.get(0).unwrap_or_default().to_string())
                    }
                    _ => None,
                })
                .collect()),
        }
    }

    /// [`Self::ask`] for one integer.
    async fn ask_int(
        &self,
        s: &Session,
        sql: &str,
        tally: &Tally,
        limit: Option<Duration>,
    ) -> Result<i64, Fail> {
        let rows = self.ask(s, sql, tally, limit).await?;
        rows.first()
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or_else(|| Fail::Lock(LockError::Server(format!("`{sql}` answered {rows:?}"))))
    }

    async fn native(
        &self,
        s: &Session,
        key: &str,
        k: i64,
        started: Instant,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Grant, Fail> {
        tally.hide_wakeups();
        let now = Instant::now();
        if deadline <= now {
            // A try-lock: one try, no wait.
            let token = self.ask_int(s, &try_sql(k), tally, None).await?;
            return match token {
                t if t > 0 => Ok(Grant {
                    token: t,
                    held: Held::Native,
                    queue_position: None,
                }),
                _ => Err(Fail::Lock(timeout(key, started))),
            };
        }
        let wait = deadline - now;
        let sql = native_sql(k, wait.as_millis() as u64);
        match self
            .ask_int(s, &sql, tally, Some(wait + self.cfg.request_timeout))
            .await
        {
            Ok(token) => Ok(Grant {
                token,
                held: Held::Native,
                queue_position: None,
            }),
            // lock_timeout: the server gave up the wait, nothing is held.
            Err(Fail::Lock(LockError::Server(e))) if e.contains("(55P03)") => {
                let _ = self.ask(s, "RESET lock_timeout", tally, None).await;
                Err(Fail::Lock(timeout(key, started)))
            }
            Err(e) => Err(e),
        }
    }

    async fn herd(
        &self,
        s: &Session,
        key: &str,
        k: i64,
        started: Instant,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Grant, Fail> {
        let channel = key_channel(k);
        let mut notes: Option<broadcast::Receiver<String>> = None;
        let result = loop {
            let token = self.ask_int(s, &try_sql(k), tally, None).await?;
            if token > 0 {
                break Ok(Grant {
                    token,
                    held: Held::Herd,
                    queue_position: None,
                });
            }
            if Instant::now() >= deadline {
                break Err(Fail::Lock(timeout(key, started)));
            }
            let Some(rx) = notes.as_mut() else {
                // Listen, then try again at once: a release between the try and the LISTEN
                // would otherwise go unheard.
                notes = Some(s.notifications());
                self.ask(s, &format!("LISTEN {channel}"), tally, None)
                    .await?;
                continue;
            };
            match wait_note(rx, &channel, self.cfg.fallback_poll, deadline, s).await {
                Woke::Note(n) => tally.wakeups(n),
                Woke::Poll => tally.fallback_poll(),
                Woke::Deadline => {}
                Woke::Broken => break Err(Fail::Broken("the connection ended".into())),
            }
        };
        if notes.is_some() && !matches!(result, Err(Fail::Broken(_))) {
            self.ask(s, &format!("UNLISTEN {channel}"), tally, None)
                .await?;
        }
        result
    }

    async fn predecessor(
        &self,
        s: &Session,
        key: &str,
        k: i64,
        started: Instant,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Grant, Fail> {
        let mut notes = s.notifications();
        let ticket = self.ask_int(s, &enqueue_sql(k), tally, None).await?;
        let channel = ticket_channel(ticket);
        let listened = self.ask(s, &format!("LISTEN {channel}"), tally, None).await;
        let waited = match listened {
            Ok(_) => {
                self.take_turn(s, key, k, ticket, started, deadline, tally, &mut notes)
                    .await
            }
            Err(e) => Err(e),
        };
        match waited {
            Ok(token) => {
                self.ask(s, &format!("UNLISTEN {channel}"), tally, None)
                    .await?;
                Ok(Grant {
                    token,
                    held: Held::Predecessor { ticket },
                    queue_position: Some(ticket as u64),
                })
            }
            Err(Fail::Broken(why)) => Err(Fail::Broken(why)),
            Err(e) => {
                // Leave the queue (waking whoever is next) before answering.
                self.ask(s, &dequeue_sql(k, ticket, false), tally, None)
                    .await?;
                self.ask(s, &format!("UNLISTEN {channel}"), tally, None)
                    .await?;
                Err(e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn take_turn(
        &self,
        s: &Session,
        key: &str,
        k: i64,
        ticket: i64,
        started: Instant,
        deadline: Instant,
        tally: &Tally,
        notes: &mut broadcast::Receiver<String>,
    ) -> Result<i64, Fail> {
        let channel = ticket_channel(ticket);
        loop {
            let answer = self.ask_int(s, &turn_sql(k, ticket), tally, None).await?;
            if answer > 0 {
                return Ok(answer);
            }
            if Instant::now() >= deadline {
                return Err(Fail::Lock(timeout(key, started)));
            }
            // First in line with the lock still held: look again soon (a session ending).
            let pause = if answer < 0 {
                self.cfg.poll_interval.min(self.cfg.fallback_poll)
            } else {
                self.cfg.fallback_poll
            };
            match wait_note(notes, &channel, pause, deadline, s).await {
                Woke::Note(n) => tally.wakeups(n),
                Woke::Poll if answer == 0 => tally.fallback_poll(),
                Woke::Poll | Woke::Deadline => {}
                Woke::Broken => return Err(Fail::Broken("the connection ended".into())),
            }
        }
    }

    /// Watches the lock on `k` while it is held: every `ttl / 3`, within `request_timeout`.
    fn heartbeat(&self, s: Shared, k: i64, trigger: LostTrigger) -> AbortOnDrop {
        let every = (self.cfg.ttl / 3).max(Duration::from_millis(10));
        let limit = self.cfg.request_timeout;
        let sql = holds_sql(k);
        AbortOnDrop(tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = s.wait_broken() => break,
                }
                match s.simple(&sql, limit, 1).await {
                    Ok(rows)
                        if rows.first().and_then(|r| r.first()).map(String::as_str)
                            == Some("1") => {}
                    _ => break,
                }
            }
            // The lock may be gone or the session unusable: end the session, so that a lock
            // it may still hold ends with it and the next call connects again.
            s.close();
            trigger.fire();
        }))
    }
}

/// How a wait for a notification ended.
enum Woke {
    /// `n` notifications on the channel arrived (lagged ones counted too).
    Note(u64),
    /// Nothing within the poll interval.
    Poll,
    /// The deadline passed.
    Deadline,
    /// The connection ended.
    Broken,
}

async fn wait_note(
    rx: &mut broadcast::Receiver<String>,
    channel: &str,
    poll: Duration,
    deadline: Instant,
    s: &Session,
) -> Woke {
    let until = (Instant::now() + poll).min(deadline);
    let hear = async {
        loop {
            match rx.recv().await {
                Ok(c) if c == channel => return Woke::Note(1),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => return Woke::Note(n),
                Err(broadcast::error::RecvError::Closed) => return Woke::Broken,
            }
        }
    };
    tokio::select! {
        w = hear => w,
        _ = s.wait_broken() => Woke::Broken,
        _ = tokio::time::sleep_until(until.into()) => {
            if until >= deadline { Woke::Deadline } else { Woke::Poll }
        }
    }
}

fn timeout(key: &str, started: Instant) -> LockError {
    LockError::Timeout {
        key: key.to_string(),
        waited: started.elapsed(),
    }
}

/// SQLSTATEs after which the session is gone or useless for locking: a connection exception
/// (class 08), an operator's intervention (class 57P: the backend terminated, the server
/// shutting down or starting), a read-only server (25006: no longer the primary).
pub(crate) fn ends_session(sqlstate: &str) -> bool {
    sqlstate.starts_with("08") || sqlstate.starts_with("57P") || sqlstate == "25006"
}

fn server_error(db: &tokio_postgres::error::DbError) -> LockError {
    LockError::Server(format!("{} ({})", db.message(), db.code().code()))
}

impl Recipe for PostgresRecipe {
    fn system(&self) -> System {
        System::Postgres
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        exclusive_only(System::Postgres, claim)?;
        check_strategy(System::Postgres, strategy)?;
        let started = Instant::now();
        let k = lock_key(&self.cfg.prefix, key);
        let s = self.session(deadline).await?;
        let step = match strategy {
            Strategy::Native => self.native(&s, key, k, started, deadline, tally).await,
            Strategy::Herd => self.herd(&s, key, k, started, deadline, tally).await,
            _ => self.predecessor(&s, key, k, started, deadline, tally).await,
        };
        let grant = match step {
            Ok(g) => g,
            Err(Fail::Lock(e)) => return Err(e),
            Err(Fail::Broken(why)) => {
                self.drop_session(&s).await;
                return Err(LockError::Withdrawn {
                    key: key.to_string(),
                    why: format!("{why}: the session is closed, and any lock it got ended with it"),
                });
            }
        };
        let (trigger, lost) = LostSignal::new();
        let heartbeat = self.heartbeat(s.clone(), k, trigger);
        Ok(Lease {
            key: key.to_string(),
            token: grant.token as u64,
            acquired_at: Instant::now(),
            ttl: self.cfg.ttl,
            ttl_spent: Duration::ZERO,
            wakeups: tally.wakeup_count(),
            requests: tally.request_count(),
            fallback_polls: tally.fallback_poll_count(),
            queue_position: grant.queue_position,
            lost,
            handle: Box::new(PgHandle {
                k,
                serial: s.serial,
                pid: s.pid,
                held: grant.held,
                _heartbeat: heartbeat,
            }),
        })
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let key = lease.key.clone();
        let h = own_handle::<PgHandle>(lease.handle, &key, System::Postgres)?;
        let lost = |why: String| LockError::Lost {
            key: key.clone(),
            why,
        };
        let current = self.session.lock().await.clone();
        let Some(s) = current.filter(|s| s.serial == h.serial && s.pid == h.pid && !s.is_broken())
        else {
            return Err(lost(
                "the session that took it has ended (its connection was replaced): its locks \
                 ended with it, nothing was unlocked"
                    .into(),
            ));
        };
        let sql = match h.held {
            Held::Native => format!("SELECT pg_advisory_unlock({})", h.k),
            Held::Herd => format!(
                "SELECT pg_advisory_unlock({}), pg_notify('{}', '')",
                h.k,
                key_channel(h.k)
            ),
            Held::Predecessor { ticket } => dequeue_sql(h.k, ticket, true),
        };
        let tally = Tally::default();
        match self.ask(&s, &sql, &tally, None).await {
            Ok(rows) if rows.first().map(String::as_str) == Some("t") => Ok(()),
            Ok(rows) => Err(lost(format!(
                "pg_advisory_unlock answered {rows:?}: this session no longer held it"
            ))),
            Err(Fail::Lock(e)) => Err(e),
            Err(Fail::Broken(why)) => {
                self.drop_session(&s).await;
                Err(lost(format!(
                    "{why}: the session is closed, and the lock ended with it"
                )))
            }
        }
    }

    async fn crash(self) {
        if let Some(s) = self.session.lock().await.take() {
            s.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_hash_is_fnv1a_and_stable() {
        // FNV-1a 64 of the single byte NUL (empty prefix, empty key).
        assert_eq!(lock_key("", "") as u64, 0xaf63_bd4c_8601_b7df);
        // FNV-1a 64 of "a\0b", computed by hand from the published constants.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in b"a\0b" {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100000001b3);
        }
        assert_eq!(lock_key("a", "b") as u64, h);
        // The prefix and the key are kept apart.
        assert_ne!(lock_key("ab", ""), lock_key("a", "b"));
        assert_ne!(lock_key("/p", "k1"), lock_key("/p", "k2"));
        assert_eq!(lock_key("/p", "k1"), lock_key("/p", "k1"));
    }

    #[test]
    fn a_terminated_or_read_only_session_is_broken_other_errors_are_answers() {
        for code in ["57P01", "57P02", "57P03", "08006", "08003", "25006"] {
            assert!(ends_session(code), "{code}");
        }
        for code in ["55P03", "57014", "42P01", "40P01"] {
            assert!(!ends_session(code), "{code}");
        }
    }

    #[test]
    fn channels_are_plain_identifiers() {
        assert_eq!(key_channel(-1), "lbk_ffffffffffffffff");
        assert_eq!(key_channel(1), "lbk_0000000000000001");
        assert_eq!(ticket_channel(42), "lbq_42");
    }

    #[test]
    fn the_native_wait_is_bounded_and_the_token_drawn_after_the_grant() {
        let sql = native_sql(-5, 0);
        assert!(sql.starts_with("SET lock_timeout = 1;"), "{sql}");
        assert!(sql.contains("FROM (SELECT pg_advisory_lock(-5) OFFSET 0) s"));
        assert!(sql.ends_with("RESET lock_timeout"));
        assert!(try_sql(7).contains("WHEN pg_try_advisory_lock(7) THEN nextval"));
    }

    #[test]
    fn the_queue_checks_live_sessions_and_notifies_one_successor() {
        let t = turn_sql(3, 10);
        assert!(t.contains("q.ticket < 10 AND NOT EXISTS"), "{t}");
        assert!(t.contains("a.backend_start = q.started"));
        let d = dequeue_sql(3, 10, true);
        assert!(d.contains("DELETE FROM lockbench_queue WHERE ticket = 10"));
        assert!(d.contains("SELECT pg_advisory_unlock(3),"));
        assert!(d.contains("q.ticket > 10 AND EXISTS"), "{d}");
        assert!(d.contains("ORDER BY q.ticket LIMIT 1"));
        assert!(dequeue_sql(3, 10, false).contains("SELECT true,"));
        assert!(holds_sql(-2).contains("((classid::bigint << 32) | objid::bigint) = -2"));
    }

    #[test]
    fn a_ticket_is_drawn_under_the_keys_queue_lock() {
        // The key's 64 bits split into the two int4 halves, high first.
        let e = enqueue_sql(0x1234_5678_9abc_def0);
        let lock = e.find("pg_advisory_xact_lock(305419896, -1698898192)");
        let insert = e.find("INSERT INTO lockbench_queue");
        assert!(lock.is_some() && lock < insert, "{e}");
        assert!(
            e.contains("AS MATERIALIZED") && e.contains("FROM queue_turn,"),
            "{e}"
        );
        assert!(enqueue_sql(-1).contains("pg_advisory_xact_lock(-1, -1)"));
    }
}
