//! The PostgreSQL advisory-lock recipe against a real primary + 1 streaming replica. Each
//! scenario is its own test (`cargo test --test recipe_postgres promote` runs one); they share
//! one cluster (distinct keys, one at a time), removed when the binary exits
//! (`common::shared`). The kill and promote scenarios leave it ready again (the killed node
//! restarted: as the primary after a kill, as the new primary's replica after a promotion).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lockbench::cluster::DataOnRestart;
use lockbench::recipe::{AnyRecipe, LockError, Recipe, RecipeConfig, Strategy, Tally};
use lockbench::{Cluster, System};
use tokio_postgres::{NoTls, SimpleQueryMessage};

use common::contention::contend;
use common::shared::{Fixture, Shared, no_state};

/// The cluster every test of this file shares.
static PG: Shared<()> = Shared::new(System::Postgres, None, Duration::from_secs(120), no_state);

fn config(prefix: &str, ttl: Duration) -> RecipeConfig {
    RecipeConfig {
        ttl,
        request_timeout: Duration::from_millis(500),
        prefix: format!("/test/{prefix}"),
        ..RecipeConfig::default()
    }
}

async fn client(cluster: &Cluster, cfg: RecipeConfig) -> AnyRecipe {
    lockbench::service::connect(cluster, cfg)
        .await
        .expect("connect to the postgres primary")
}

/// The recipe's key hash (FNV-1a 64 of prefix, NUL, key), written out again to check that the
/// server sees the key the client computed.
fn fnv(prefix: &str, key: &str) -> i64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in prefix.bytes().chain([0u8]).chain(key.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h as i64
}

/// The primary's name and endpoint now.
async fn primary(cluster: &Cluster) -> (String, String) {
    let leader = cluster.leader().await.expect("leader").expect("a primary");
    let endpoint = cluster.node(&leader).expect("primary node").endpoint();
    (leader, endpoint)
}

/// Runs `sql` on `endpoint` over a fresh connection: every row's first column.
async fn raw(endpoint: &str, sql: &str) -> Vec<String> {
    let (host, port) = endpoint.rsplit_once(':').unwrap();
    let mut cfg = tokio_postgres::Config::new();
    cfg.host(host)
        .port(port.parse().unwrap())
        .user("postgres")
        .dbname("postgres");
    let (c, conn) = tokio::time::timeout(Duration::from_secs(5), cfg.connect(NoTls))
        .await
        .expect("raw connect in time")
        .expect("raw connect");
    let driver = tokio::spawn(conn);
    let rows = tokio::time::timeout(Duration::from_secs(5), c.simple_query(sql))
        .await
        .expect("raw query in time")
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    driver.abort();
    rows.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or_default().to_string()),
            _ => None,
        })
        .collect()
}

async fn waiting_advisory(endpoint: &str) -> usize {
    raw(
        endpoint,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
    )
    .await[0]
        .parse()
        .unwrap()
}

/// Waits until `cond` holds, polling every 20 ms, at most `limit`: how long it took.
async fn within<F, Fut>(limit: Duration, what: &str, mut cond: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t = Instant::now();
    while !cond().await {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    t.elapsed()
}

fn conformance(st: Strategy) {
    PG.run(&format!("postgres/{st}/conformance"), |f| async move {
        let mut clients = Vec::new();
        for _ in 0..6 {
            clients.push(client(&f.cluster, config("conf", Duration::from_secs(3))).await);
        }
        let key = format!("conformance-{st}");
        let out = contend(clients, &key, st, 15).await;
        eprintln!("{}", out.summary(&format!("postgres/{st}")));
        out.assert_exclusive(&format!("postgres/{st}"), 90);
        match st {
            Strategy::Native => assert!(out.holds.iter().all(|h| h.wakeups.is_none())),
            Strategy::Herd => {
                // Waiters hear releases: the wake-up path works (not the fallback poll).
                let w = out
                    .wakeups_per_handoff()
                    .expect("handoffs under contention");
                eprintln!("postgres/herd: {w:.2} wake-ups per handoff");
                assert!(w >= 1.0, "herd waiters must hear the releases: {w}");
            }
            _ => {
                assert_eq!(
                    out.fifo_violations(),
                    0,
                    "predecessor grants in ticket order"
                );
                assert!(out.holds.iter().all(|h| h.queue_position.is_some()));
                let w = out
                    .wakeups_per_handoff()
                    .expect("handoffs under contention");
                eprintln!("postgres/predecessor: {w:.2} wake-ups per handoff");
                assert!(w <= 1.0, "one release wakes one waiter: {w}");
                assert!(out.handoff_percentile(0.99) < Duration::from_millis(500));
            }
        }
    });
}

#[test]
fn conformance_native() {
    conformance(Strategy::Native);
}

#[test]
fn conformance_herd() {
    conformance(Strategy::Herd);
}

#[test]
fn conformance_predecessor() {
    conformance(Strategy::Predecessor);
}

/// Native waiters queued one by one (each seen waiting in `pg_locks` before the next comes)
/// are granted in the order they queued: PostgreSQL's lock queue is FIFO for one lock mode.
#[test]
fn native_queue_is_fifo() {
    PG.run("postgres/native/fifo", |f| async move {
        let (_, endpoint) = primary(&f.cluster).await;
        let cfg = config("fifo", Duration::from_secs(3));
        let holder = client(&f.cluster, cfg.clone()).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        let first = holder
            .acquire("q", Strategy::Native, deadline)
            .await
            .unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let granted = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let w = client(&f.cluster, cfg.clone()).await;
            let order = order.clone();
            let granted = granted.clone();
            tasks.push(tokio::spawn(async move {
                let lease = w.acquire("q", Strategy::Native, deadline).await.unwrap();
                order.lock().unwrap().push(i);
                granted.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                w.release(lease).await.unwrap();
            }));
            let ep = endpoint.clone();
            within(Duration::from_secs(5), "waiter queued", || {
                let ep = ep.clone();
                async move { waiting_advisory(&ep).await == i + 1 }
            })
            .await;
        }
        holder.release(first).await.unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        eprintln!("postgres/native grant order of waiters queued 0..5: {order:?}");
        assert_eq!(order, [0, 1, 2, 3, 4], "the server's queue is FIFO");
    });
}

/// The server sees the key the client hashed; the heartbeat finds it (no false loss over three
/// heartbeats); a stale lease (its session ended) unlocks nothing, the next holder keeps the
/// lock, and the tokens grow across the grants.
#[test]
fn owner_checked_release_and_fencing() {
    PG.run("postgres/owner-checked-release", |f| async move {
        let (_, endpoint) = primary(&f.cluster).await;
        let cfg = config("owner", Duration::from_millis(600));
        // A key whose hash is negative, so the pg_locks arithmetic is checked on the sign bit.
        let key = (0..)
            .map(|i| format!("owner-{i}"))
            .find(|k| fnv(&cfg.prefix, k) < 0)
            .unwrap();
        let a = client(&f.cluster, cfg.clone()).await;
        let b = client(&f.cluster, cfg.clone()).await;
        let c = client(&f.cluster, cfg.clone()).await;
        let soon = || Instant::now() + Duration::from_secs(5);
        for st in [Strategy::Native, Strategy::Herd, Strategy::Predecessor] {
            let stale = a.acquire(&key, st, soon()).await.unwrap();
            let seen = raw(
                &endpoint,
                "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks \
                 WHERE locktype = 'advisory' AND granted AND objsubid = 1",
            )
            .await;
            assert_eq!(seen, [fnv(&cfg.prefix, &key).to_string()]);
            tokio::time::sleep(Duration::from_millis(700)).await;
            assert!(
                !stale.lost.is_lost(),
                "{st}: three heartbeats found the lock"
            );
            // End A's session from outside: its lock goes with it.
            raw(
                &endpoint,
                "SELECT pg_terminate_backend(pid) FROM pg_locks \
                 WHERE locktype = 'advisory' AND granted",
            )
            .await;
            let mut lost = stale.lost.clone();
            tokio::time::timeout(Duration::from_secs(2), lost.wait())
                .await
                .expect("the loss signal fires when the session ends");
            let held = b.acquire(&key, st, soon()).await.unwrap();
            assert!(held.token > stale.token, "{st}: tokens grow");
            let e = a.release(stale).await.unwrap_err();
            assert!(matches!(e, LockError::Lost { .. }), "{st}: {e}");
            // B still holds: a try-lock by C fails.
            let e = c.acquire(&key, st, Instant::now()).await.unwrap_err();
            assert!(matches!(e, LockError::Timeout { .. }), "{st}: {e}");
            let t = held.token;
            b.release(held).await.unwrap();
            // A connects again for its next call, and the tokens still grow.
            let again = a.acquire(&key, st, soon()).await.unwrap();
            assert!(again.token > t, "{st}: tokens grow");
            a.release(again).await.unwrap();
        }
        let left = raw(
            &endpoint,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
        )
        .await;
        assert_eq!(left, ["0"], "every lock given back");
    });
}

/// Killing the primary while a client holds fires the client's loss signal within a heartbeat
/// and a request timeout; the primary restarted with its data is the primary again.
#[test]
fn loss_signal_fires_when_the_primary_is_killed() {
    PG.run("postgres/kill-primary", |f| async move {
        let (old, _) = primary(&f.cluster).await;
        let cfg = config("kill", Duration::from_millis(900));
        let a = client(&f.cluster, cfg.clone()).await;
        let lease = a
            .acquire("k", Strategy::Native, Instant::now() + Duration::from_secs(5))
            .await
            .unwrap();
        f.cluster.kill(&old).await.unwrap();
        let t = Instant::now();
        let mut lost = lease.lost.clone();
        tokio::time::timeout(Duration::from_secs(5), lost.wait())
            .await
            .expect("the loss signal fires");
        let took = t.elapsed();
        eprintln!("postgres: loss signal {took:?} after the primary was killed (ttl/3 = 300 ms, request_timeout 500 ms)");
        assert!(took <= Duration::from_millis(300 + 500 + 300), "{took:?}");
        let before = lease.token;
        assert!(a.release(lease).await.is_err(), "a lost lock's release is an error");
        f.cluster.restart(&old, DataOnRestart::Keep).await.unwrap();
        let back = within(Duration::from_secs(30), "old primary serving", || async {
            f.cluster.serving(&old).await.is_ok()
        })
        .await;
        assert_eq!(primary(&f.cluster).await.0, old);
        // The fence sequence survives the crash: WAL-logged ahead, flushed before use.
        let after = client(&f.cluster, cfg)
            .await
            .acquire("k", Strategy::Native, Instant::now() + Duration::from_secs(5))
            .await
            .expect("granted on the restarted primary");
        eprintln!(
            "postgres: the primary restarted with its data serves again after {back:?}; \
             token {before} before the kill, {} after",
            after.token
        );
        assert!(after.token > before, "fencing tokens grow across a crash");
    });
}

/// Kill the primary while A holds, promote the replica: advisory locks are not replicated,
/// so B is granted the same lock on the promoted server at once (two holders, the old one not
/// yet aware unless its heartbeat fired), and the fence sequence continues above A's token.
/// The old primary restarts as the new one's replica (re-cloned).
#[test]
fn promote_frees_every_lock() {
    PG.run("postgres/promote", |f: &'static Fixture<()>| async move {
        let (old, _) = primary(&f.cluster).await;
        let cfg = config("promote", Duration::from_secs(3));
        let a = client(&f.cluster, cfg.clone()).await;
        let held = a
            .acquire(
                "p",
                Strategy::Native,
                Instant::now() + Duration::from_secs(5),
            )
            .await
            .unwrap();
        f.cluster.kill(&old).await.unwrap();
        let t = Instant::now();
        let new = f.cluster.promote().await.expect("promote");
        let promoted_in = t.elapsed();
        assert_ne!(new, old);
        let b = client(&f.cluster, cfg.clone()).await;
        let t = Instant::now();
        let lease = b
            .acquire(
                "p",
                Strategy::Native,
                Instant::now() + Duration::from_secs(2),
            )
            .await
            .expect("the lock A held is free on the promoted server");
        let granted_in = t.elapsed();
        eprintln!(
            "postgres: promoted {new} in {promoted_in:?}; B granted A's lock {granted_in:?} \
             after connecting; tokens A {} then B {}; A's loss signal fired: {}",
            held.token,
            lease.token,
            held.lost.is_lost()
        );
        assert!(granted_in < Duration::from_millis(500), "{granted_in:?}");
        assert!(lease.token > held.token, "the sequence continues above");
        b.release(lease).await.unwrap();
        f.cluster.restart(&old, DataOnRestart::Keep).await.unwrap();
        let back = within(Duration::from_secs(40), "old primary rejoins", || async {
            f.cluster.serving(&old).await.is_ok()
        })
        .await;
        assert_eq!(primary(&f.cluster).await.0, new);
        eprintln!("postgres: {old} re-cloned as {new}'s replica, streaming after {back:?}");
        drop(a);
    });
}

/// Predecessor: a waiter whose session died while it waited leaves its queue row behind. A
/// release notifies the first waiter whose session is alive, which deletes the dead row ahead
/// of it and takes the lock at once, not after a fallback poll.
#[test]
fn predecessor_skips_a_dead_waiter() {
    PG.run("postgres/predecessor/dead-waiter", |f| async move {
        let (_, endpoint) = primary(&f.cluster).await;
        let cfg = RecipeConfig {
            fallback_poll: Duration::from_millis(300),
            ..config("dead", Duration::from_secs(3))
        };
        let st = Strategy::Predecessor;
        let deadline = Instant::now() + Duration::from_secs(20);
        let k = fnv(&cfg.prefix, "d");
        let queued = |n: usize| {
            let ep = endpoint.clone();
            async move {
                let sql = format!("SELECT count(*) FROM lockbench_queue WHERE k = {k}");
                raw(&ep, &sql).await == [n.to_string()]
            }
        };
        // Waiters that have run a turn check (after their LISTEN): their last query is it,
        // finished (idle) or running again. Not only the idle ones: B, first in line behind a
        // held lock, checks every 10 ms, and with three test binaries beside each other on 2
        // cores no sample of 5 s found B and C idle at once.
        let waiting = |n: usize| {
            let ep = endpoint.clone();
            async move {
                let sql = "SELECT count(*) FROM pg_stat_activity WHERE state IN ('idle', 'active') \
                           AND query LIKE 'WITH dead AS%'";
                raw(&ep, sql).await == [n.to_string()]
            }
        };
        let a = client(&f.cluster, cfg.clone()).await;
        let held = a.acquire("d", st, deadline).await.unwrap();
        let b = client(&f.cluster, cfg.clone()).await;
        let dying = tokio::spawn(async move { b.acquire("d", st, deadline).await.map(|_| ()) });
        within(Duration::from_secs(5), "B queued", || queued(2)).await;
        within(Duration::from_secs(5), "B waiting", || waiting(1)).await;
        let c = client(&f.cluster, cfg.clone()).await;
        // C's counts, read at the release too: C may poll while the scenario sets up (B's death
        // is waited for, seconds with other test binaries beside this one), and those polls
        // are not what this checks.
        let tally = Arc::new(Tally::default());
        let counted = tally.clone();
        let last = tokio::spawn(async move {
            let lease = c.acquire_counted("d", st, deadline, &counted).await;
            let granted = Instant::now();
            let seen = lease.map(|l| (l.token, l.queue_position, l.fallback_polls, l));
            match seen {
                Ok((token, position, polls, l)) => {
                    c.release(l).await.expect("C releases");
                    (granted, Ok((token, position, polls)))
                }
                Err(e) => (granted, Err(e)),
            }
        });
        within(Duration::from_secs(5), "C queued", || queued(3)).await;
        within(Duration::from_secs(5), "C waiting", || waiting(2)).await;
        // B's process dies while it waits: its connection closes, its row stays.
        dying.abort();
        let ended = dying.await;
        assert!(
            ended.as_ref().is_err_and(|e| e.is_cancelled()),
            "B was still waiting: {ended:?}"
        );
        within(Duration::from_secs(5), "B's session ended", || waiting(1)).await;
        let polls_before = tally.fallback_poll_count();
        let released = Instant::now();
        a.release(held).await.unwrap();
        let (granted, lease) = last.await.unwrap();
        let (token, position, polls) = lease.expect("C is granted after the dead waiter");
        let after = granted - released;
        eprintln!(
            "postgres/predecessor: C (ticket {position:?}, token {token}) granted {after:?} \
             after the release, past a dead waiter, with {polls} fallback polls ({polls_before} \
             of them before the release)"
        );
        assert_eq!(
            polls - polls_before,
            0,
            "the release woke C, past the dead waiter, with no poll between them"
        );
        assert!(after < Duration::from_millis(300), "{after:?}");
        within(Duration::from_secs(5), "every row is gone", || queued(0)).await;
    });
}

/// Tickets commit in the order they are drawn: a waiter whose enqueue is slow to commit (held
/// 1 s at its commit by a deferred trigger this test adds, for its key only) is still granted
/// before a waiter that enqueued after it; the later one waits for the earlier one's commit
/// instead of finding no row ahead and taking the lock out of turn. (Two lanes of tests on
/// 2 cores once made this happen in `conformance_predecessor`.)
#[test]
fn predecessor_tickets_commit_in_order() {
    PG.run("postgres/predecessor/commit-order", |f| async move {
        let (_, endpoint) = primary(&f.cluster).await;
        let cfg = RecipeConfig {
            // X's enqueue takes 1 s, and Y's waits for it.
            request_timeout: Duration::from_secs(3),
            ..config("commit-order", Duration::from_secs(3))
        };
        let st = Strategy::Predecessor;
        let k = fnv(&cfg.prefix, "c");
        let x = client(&f.cluster, cfg.clone()).await;
        let y = client(&f.cluster, cfg.clone()).await;
        // The first enqueue of the key (one sequence value: sequences ignore transactions)
        // sleeps 1 s at its commit, its ticket drawn and its row not yet seen.
        raw(
            &endpoint,
            &format!(
                "DROP TRIGGER IF EXISTS lb_test_slow ON lockbench_queue; \
                 DROP SEQUENCE IF EXISTS lb_test_once; CREATE SEQUENCE lb_test_once; \
                 CREATE OR REPLACE FUNCTION lb_test_slow_commit() RETURNS trigger \
                 LANGUAGE plpgsql AS $$ BEGIN \
                 IF nextval('lb_test_once') = 1 THEN PERFORM pg_sleep(1); END IF; \
                 RETURN NULL; END $$; \
                 CREATE CONSTRAINT TRIGGER lb_test_slow AFTER INSERT ON lockbench_queue \
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.k = {k}) \
                 EXECUTE FUNCTION lb_test_slow_commit()"
            ),
        )
        .await;
        let deadline = Instant::now() + Duration::from_secs(10);
        let take = |c: AnyRecipe| {
            tokio::spawn(async move {
                let lease = c.acquire("c", st, deadline).await.expect("granted");
                let granted = Instant::now();
                let ticket = lease.queue_position.expect("a predecessor ticket");
                tokio::time::sleep(Duration::from_millis(200)).await;
                c.release(lease).await.expect("released");
                (granted, ticket)
            })
        };
        let first = take(x);
        let slow = || {
            let ep = endpoint.clone();
            async move {
                let sql = "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'";
                raw(&ep, sql).await == ["1"]
            }
        };
        within(
            Duration::from_secs(5),
            "X's enqueue held at its commit",
            slow,
        )
        .await;
        let second = take(y);
        let (x_granted, x_ticket) = first.await.unwrap();
        let (y_granted, y_ticket) = second.await.unwrap();
        raw(
            &endpoint,
            "DROP TRIGGER lb_test_slow ON lockbench_queue; \
             DROP FUNCTION lb_test_slow_commit(); DROP SEQUENCE lb_test_once",
        )
        .await;
        eprintln!(
            "postgres/predecessor: X (ticket {x_ticket}) granted {:?} before Y (ticket {y_ticket})",
            y_granted.saturating_duration_since(x_granted)
        );
        assert!(
            x_ticket < y_ticket,
            "X drew the first ticket: {x_ticket} vs {y_ticket}"
        );
        assert!(
            x_granted < y_granted,
            "Y (ticket {y_ticket}) was granted {:?} before X (ticket {x_ticket}), whose row \
             was not yet committed",
            x_granted - y_granted
        );
    });
}

/// A connection that breaks mid-acquire ends the session and any lock it got: the waiter
/// answers `Withdrawn` (certainly not held), and its next call connects again and is granted.
#[test]
fn a_broken_connection_mid_acquire_withdraws() {
    PG.run("postgres/withdraw", |f| async move {
        let (_, endpoint) = primary(&f.cluster).await;
        let cfg = config("withdraw", Duration::from_secs(3));
        for st in [Strategy::Native, Strategy::Herd, Strategy::Predecessor] {
            let a = client(&f.cluster, cfg.clone()).await;
            let w = client(&f.cluster, cfg.clone()).await;
            let deadline = Instant::now() + Duration::from_secs(10);
            let held = a.acquire("w", st, deadline).await.unwrap();
            let w = Arc::new(w);
            let waiter = {
                let w = w.clone();
                tokio::spawn(async move { w.acquire("w", st, deadline).await })
            };
            // The waiter is waiting: not the holder, and in a lock wait (native) or idle after
            // a try (herd) or a turn check (predecessor).
            let waiters = "FROM pg_stat_activity WHERE application_name = 'lockbench' \
                           AND pid NOT IN (SELECT pid FROM pg_locks WHERE locktype = \
                           'advisory' AND granted) AND (wait_event_type = 'Lock' OR \
                           (state = 'idle' AND (query LIKE 'SELECT CASE WHEN pg_try%' \
                           OR query LIKE 'WITH dead AS%')))";
            within(Duration::from_secs(5), "W waiting", || {
                let ep = endpoint.clone();
                async move { raw(&ep, &format!("SELECT count(*) {waiters}")).await == ["1"] }
            })
            .await;
            raw(
                &endpoint,
                &format!("SELECT pg_terminate_backend(pid) {waiters}"),
            )
            .await;
            let e = waiter.await.unwrap().unwrap_err();
            assert!(matches!(e, LockError::Withdrawn { .. }), "{st}: {e}");
            a.release(held).await.unwrap();
            let again = w
                .acquire("w", st, Instant::now() + Duration::from_secs(5))
                .await
                .expect("the next call connects again");
            w.release(again).await.unwrap();
            eprintln!("postgres/{st}: a waiter whose session was terminated answered: {e}");
        }
    });
}
