//! The MariaDB `GET_LOCK` recipe against a real primary + replica (GTID replication). Each
//! scenario is its own test (`cargo test --test recipe_mariadb promote` runs one); they share one
//! cluster (distinct keys and prefixes, one at a time), removed when the binary exits
//! (`common::shared`). Clients connect through `lockbench::service::connect`, as the runner's
//! do; the checks on the server side use an operator's connection (`lb`).

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockbench::cluster::DataOnRestart;
use lockbench::recipe::{AnyRecipe, LockError, Recipe, RecipeConfig, Strategy};
use lockbench::{Cluster, System};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder};

use common::contention::contend;
use common::shared::{Fixture, Shared, no_state};

/// The cluster every test of this file shares.
static MARIADB: Shared<()> = Shared::new(System::Mariadb, None, Duration::from_secs(120), no_state);

/// A short TTL, so heartbeats (every ttl/3) and a lost session show within seconds.
fn config(prefix: &str) -> RecipeConfig {
    RecipeConfig {
        prefix: format!("/t/{prefix}"),
        ttl: Duration::from_secs(3),
        request_timeout: Duration::from_secs(1),
        ..RecipeConfig::default()
    }
}

async fn client(cluster: &Cluster, cfg: RecipeConfig) -> AnyRecipe {
    lockbench::service::connect(cluster, cfg)
        .await
        .expect("connect a MariaDB client")
}

/// The primary now (a promotion may have moved it) and an operator's connection to it.
async fn primary(cluster: &Cluster) -> (String, Conn) {
    let name = cluster
        .leader()
        .await
        .expect("leader")
        .expect("one primary");
    let endpoint = cluster.node(&name).expect("primary node").endpoint();
    (name, admin(&endpoint).await)
}

async fn admin(endpoint: &str) -> Conn {
    let (host, port) = endpoint.rsplit_once(':').expect("host:port");
    let opts = OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port.parse().expect("port"))
        .user(Some("lb"))
        .pass(Some("lockbench"))
        .prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(5), Conn::new(opts))
        .await
        .expect("admin connection in time")
        .expect("admin connection")
}

/// The connection id that holds lock `name` on the server `conn` talks to (`None`: free).
async fn holder(conn: &mut Conn, name: &str) -> Option<u64> {
    conn.exec_first::<Option<u64>, _, _>("SELECT IS_USED_LOCK(?)", (name,))
        .await
        .expect("IS_USED_LOCK")
        .flatten()
}

/// Waits up to `limit` until `n` sessions wait in `GET_LOCK` (`User lock` in the process list).
async fn waiters(adm: &mut Conn, n: u64, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < limit {
        let seen: Option<u64> = adm
            .query_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE STATE = 'User lock' AND INFO LIKE 'SELECT GET_LOCK%'",
            )
            .await
            .expect("process list");
        if seen == Some(n) {
            return Some(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// Waits up to `limit` for `f` to hold, polling every 20 ms; how long it took, or `None`.
async fn within<F, Fut>(limit: Duration, mut f: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t = Instant::now();
    while t.elapsed() < limit {
        if f().await {
            return Some(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

fn contention(st: Strategy) {
    let name = format!("mariadb/{st}/mutual_exclusion");
    MARIADB.run(&name.clone(), |f: &'static Fixture<()>| async move {
        let mut clients = Vec::new();
        for _ in 0..8 {
            clients.push(client(&f.cluster, config(&format!("mx-{st}"))).await);
        }
        let out = contend(clients, "hot", st, 20).await;
        eprintln!("{}", out.summary(&name));
        out.assert_exclusive(&name, 160);
        assert_eq!(out.holds.len(), 160);
        match st {
            // The server wakes its waiters: the client sees none; GET_LOCK and NEXTVAL.
            Strategy::Native => {
                assert!(out.holds.iter().all(|h| h.wakeups.is_none()));
                assert!(out.holds.iter().all(|h| h.requests == 2), "{name}");
            }
            // Every poll is a wake-up and a request; a contended lock costs polls.
            _ => {
                assert!(
                    out.holds
                        .iter()
                        .all(|h| { h.requests == h.wakeups.expect("herd counts its polls") + 2 })
                );
                assert!(out.mean_wakeups() > 1.0, "{}", out.mean_wakeups());
            }
        }
    });
}

#[test]
fn native_mutual_exclusion_under_contention() {
    contention(Strategy::Native);
}

#[test]
fn herd_mutual_exclusion_under_contention() {
    contention(Strategy::Herd);
}

#[test]
fn predecessor_is_not_offered() {
    MARIADB.run("mariadb/predecessor_is_not_offered", |f| async move {
        let c = client(&f.cluster, config("pred")).await;
        let e = c
            .acquire(
                "k",
                Strategy::Predecessor,
                Instant::now() + Duration::from_secs(1),
            )
            .await
            .expect_err("no predecessor strategy");
        assert!(matches!(e, LockError::Unsupported { .. }), "{e}");
        c.crash().await;
    });
}

/// Five waiters queue on a held lock one after another, each seen waiting (`User lock` in the
/// process list) before the next asks; the grants come in the order they queued.
#[test]
fn native_grants_in_queue_order() {
    MARIADB.run("mariadb/native/grants_in_queue_order", |f| async move {
        let (_, mut adm) = primary(&f.cluster).await;
        let cfg = config("fifo");
        let holder_client = client(&f.cluster, cfg.clone()).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let held = holder_client
            .acquire("q", Strategy::Native, deadline)
            .await
            .expect("first holder");
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..5usize {
            let c = client(&f.cluster, cfg.clone()).await;
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                let l = c
                    .acquire("q", Strategy::Native, deadline)
                    .await
                    .expect("waiter granted");
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(20)).await;
                c.release(l).await.expect("release");
                c.crash().await;
            }));
            let waiting = waiters(&mut adm, i as u64 + 1, Duration::from_secs(5)).await;
            assert!(waiting.is_some(), "waiter {i} never showed as waiting");
        }
        holder_client.release(held).await.expect("release");
        for t in tasks {
            t.await.expect("waiter task");
        }
        let order = order.lock().unwrap().clone();
        eprintln!("mariadb native: queued 0..5, granted {order:?}");
        assert_eq!(order, [0, 1, 2, 3, 4], "GET_LOCK's queue is FIFO");
        holder_client.crash().await;
    });
}

/// A lease whose session was killed (its lock gone and granted to another) releases nothing:
/// `release` answers Lost and the new holder keeps the lock; its loss signal fired.
#[test]
fn a_stale_lease_does_not_release_the_next_holders_lock() {
    MARIADB.run("mariadb/stale_release", |f| async move {
        let (_, mut adm) = primary(&f.cluster).await;
        let cfg = config("stale");
        let name = format!("{}/k", cfg.prefix);
        let a = client(&f.cluster, cfg.clone()).await;
        let b = client(&f.cluster, cfg.clone()).await;
        let soon = || Instant::now() + Duration::from_secs(5);
        let old = a.acquire("k", Strategy::Native, soon()).await.expect("a");
        let a_id = holder(&mut adm, &name).await.expect("a holds it");
        let mut a_lost = old.lost.clone();
        adm.query_drop(format!("KILL {a_id}")).await.expect("KILL");
        let new = b.acquire("k", Strategy::Native, soon()).await.expect("b");
        assert!(new.token > old.token, "{} after {}", new.token, old.token);
        let b_id = holder(&mut adm, &name).await.expect("b holds it");
        assert_ne!(a_id, b_id);
        // The heartbeat (every ttl/3 = 1 s) finds the session gone.
        let told = tokio::time::timeout(Duration::from_secs(3), a_lost.wait()).await;
        assert!(told.is_ok(), "the killed session's holder was not told");
        let e = a.release(old).await.expect_err("stale release");
        assert!(matches!(e, LockError::Lost { .. }), "{e}");
        assert_eq!(
            holder(&mut adm, &name).await,
            Some(b_id),
            "b still holds it"
        );
        // A, on a new connection now, cannot take it while B holds it; once B lets go, it can.
        let e = a
            .acquire(
                "k",
                Strategy::Herd,
                Instant::now() + Duration::from_millis(200),
            )
            .await
            .expect_err("b holds it");
        assert!(matches!(e, LockError::Timeout { .. }), "{e}");
        b.release(new).await.expect("b releases");
        assert_eq!(holder(&mut adm, &name).await, None);
        let again = a
            .acquire("k", Strategy::Native, soon())
            .await
            .expect("a again");
        a.release(again).await.expect("a releases");
        a.crash().await;
        b.crash().await;
    });
}

/// The calibration mistake `unsafe-shared-session`: two clients of one process share a
/// session, so the second is granted while the first holds (one holding session on the server,
/// two holders in the process); the herd, each client on its own session, keeps the second out.
#[test]
fn a_shared_session_grants_a_held_lock_to_a_second_client() {
    MARIADB.run("mariadb/shared_session", |f| async move {
        let (_, mut adm) = primary(&f.cluster).await;
        let cfg = config("shared");
        let name = format!("{}/k", cfg.prefix);
        let a = client(&f.cluster, cfg.clone()).await;
        let b = client(&f.cluster, cfg.clone()).await;
        let soon = || Instant::now() + Duration::from_millis(500);
        let st = Strategy::UnsafeSharedSession;
        let first = a.acquire("k", st, soon()).await.expect("a");
        let session = holder(&mut adm, &name).await.expect("a's session holds it");
        let second = b
            .acquire("k", st, soon())
            .await
            .expect("b is granted while a holds: the shared session takes it again");
        assert!(
            second.token > first.token,
            "{} after {}",
            second.token,
            first.token
        );
        assert_eq!(
            holder(&mut adm, &name).await,
            Some(session),
            "one session holds it"
        );
        // The owner check cannot tell the clients apart: both releases succeed.
        a.release(first).await.expect("a releases");
        assert_eq!(
            holder(&mut adm, &name).await,
            Some(session),
            "b's nesting still holds"
        );
        b.release(second).await.expect("b releases");
        assert_eq!(holder(&mut adm, &name).await, None);
        // The same two clients with the herd: the second waits out its deadline.
        let held = a
            .acquire("k", Strategy::Herd, soon())
            .await
            .expect("a, herd");
        let e = b
            .acquire("k", Strategy::Herd, soon())
            .await
            .expect_err("a holds it on its own session");
        assert!(matches!(e, LockError::Timeout { .. }), "{e}");
        a.release(held).await.expect("a releases");
        a.crash().await;
        b.crash().await;
    });
}

/// Tokens strictly grow across grants, alternating between clients and strategies.
#[test]
fn fencing_tokens_grow_across_grants() {
    MARIADB.run("mariadb/fencing_grows", |f| async move {
        let cfg = config("fence");
        let a = client(&f.cluster, cfg.clone()).await;
        let b = client(&f.cluster, cfg).await;
        let mut last = 0;
        for i in 0..10 {
            let (c, st) = if i % 2 == 0 {
                (&a, Strategy::Native)
            } else {
                (&b, Strategy::Herd)
            };
            let l = c
                .acquire("f", st, Instant::now() + Duration::from_secs(5))
                .await
                .expect("grant");
            assert!(l.token > last, "token {} after {last}", l.token);
            last = l.token;
            c.release(l).await.expect("release");
        }
        a.crash().await;
        b.crash().await;
    });
}

/// Killing the primary under a holder: its heartbeat fails and the loss signal fires within
/// ttl/3 + request_timeout (1 s + 1 s here). The primary restarts on its kept data.
#[test]
fn the_loss_signal_fires_when_the_primary_is_killed() {
    MARIADB.run("mariadb/loss_on_primary_kill", |f| async move {
        let (name, _) = primary(&f.cluster).await;
        let c = client(&f.cluster, config("loss")).await;
        let l = c
            .acquire(
                "k",
                Strategy::Native,
                Instant::now() + Duration::from_secs(5),
            )
            .await
            .expect("grant");
        let mut lost = l.lost.clone();
        let killed = Instant::now();
        f.cluster.kill(&name).await.expect("kill the primary");
        let told = tokio::time::timeout(Duration::from_secs(4), lost.wait()).await;
        let after = killed.elapsed();
        eprintln!("mariadb: loss signal {after:?} after the primary was killed");
        assert!(told.is_ok(), "no loss signal within 4 s of the kill");
        assert!(after <= Duration::from_millis(2500), "{after:?}");
        let e = c
            .release(l)
            .await
            .expect_err("the lock went with the server");
        assert!(matches!(e, LockError::Lost { .. }), "{e}");
        c.crash().await;
        f.cluster
            .restart(&name, DataOnRestart::Keep)
            .await
            .expect("restart the primary");
        f.cluster
            .wait_ready(Duration::from_secs(60))
            .await
            .expect("the primary back, its replica following it");
        assert_eq!(f.cluster.leader().await.unwrap().as_deref(), Some(&*name));
    });
}

/// The promote fault's steps: a lock held on the primary is grantable on the promoted replica
/// at once (session locks are not replicated), its fencing tokens continue above the old ones,
/// and the old primary, restarted with its data, rejoins as the new one's replica.
#[test]
fn a_promoted_replica_grants_the_old_primarys_locks_at_once() {
    MARIADB.run("mariadb/promote", |f| async move {
        let (old, _) = primary(&f.cluster).await;
        let cfg = config("promote");
        let a = client(&f.cluster, cfg.clone()).await;
        let held = a
            .acquire(
                "k",
                Strategy::Native,
                Instant::now() + Duration::from_secs(5),
            )
            .await
            .expect("a holds it on the old primary");
        let mut a_lost = held.lost.clone();
        f.cluster.kill(&old).await.expect("kill the primary");
        let t = Instant::now();
        let new = f.cluster.promote().await.expect("promote");
        eprintln!("mariadb: promoted {new} in {:?}", t.elapsed());
        assert_ne!(new, old);
        assert_eq!(f.cluster.leader().await.unwrap().as_deref(), Some(&*new));
        let b = client(&f.cluster, cfg.clone()).await;
        let t = Instant::now();
        let granted = b
            .acquire(
                "k",
                Strategy::Native,
                Instant::now() + Duration::from_secs(5),
            )
            .await
            .expect("b gets it on the promoted replica");
        let waited = t.elapsed();
        eprintln!(
            "mariadb: granted on {new} in {waited:?}, token {} after {}",
            granted.token, held.token
        );
        assert!(waited < Duration::from_millis(500), "{waited:?}");
        assert!(granted.token > held.token, "the sequence continues above");
        let told = tokio::time::timeout(Duration::from_secs(3), a_lost.wait()).await;
        assert!(told.is_ok(), "a was not told its lock is gone");
        assert!(a.release(held).await.is_err());
        b.release(granted).await.expect("b releases");
        let t = Instant::now();
        f.cluster
            .restart(&old, DataOnRestart::Keep)
            .await
            .expect("restart the old primary");
        let rejoined = within(Duration::from_secs(60), || async {
            f.cluster.serving(&old).await.is_ok()
        })
        .await;
        eprintln!("mariadb: {old} rejoined as a replica in {rejoined:?}");
        assert!(rejoined.is_some(), "{old} did not rejoin as a replica");
        f.cluster
            .wait_ready(Duration::from_secs(30))
            .await
            .expect("ready with the new primary");
        assert_eq!(f.cluster.leader().await.unwrap().as_deref(), Some(&*new));
        eprintln!("mariadb: restart to ready {:?}", t.elapsed());
        // The old client reconnects to the new primary.
        let l = a
            .acquire("k", Strategy::Herd, Instant::now() + Duration::from_secs(5))
            .await
            .expect("a again, on the new primary");
        a.release(l).await.expect("release");
        a.crash().await;
        b.crash().await;
    });
}

/// A primary with two replicas, for the promotion that must point the other replica at the
/// promoted one.
static MARIADB3: Shared<()> =
    Shared::new(System::Mariadb, Some(3), Duration::from_secs(120), no_state);

/// Size 3: the promoted replica's fencing writes reach the other replica, which now follows
/// it, and the old primary rejoins as a third replica.
#[test]
fn with_two_replicas_a_promotion_repoints_the_other() {
    MARIADB3.run("mariadb3/promote_repoints", |f| async move {
        let (old, _) = primary(&f.cluster).await;
        let cfg = config("promote3");
        let a = client(&f.cluster, cfg.clone()).await;
        let l = a
            .acquire(
                "k",
                Strategy::Native,
                Instant::now() + Duration::from_secs(5),
            )
            .await
            .expect("grant on the old primary");
        let first = l.token;
        f.cluster.kill(&old).await.expect("kill the primary");
        let new = f.cluster.promote().await.expect("promote");
        assert_ne!(new, old);
        let b = client(&f.cluster, cfg).await;
        let l2 = b
            .acquire("k", Strategy::Herd, Instant::now() + Duration::from_secs(5))
            .await
            .expect("grant on the promoted replica");
        assert!(l2.token > first);
        b.release(l2).await.expect("release");
        // Every running replica follows the new primary, both threads running.
        let others: Vec<String> = f
            .cluster
            .servers()
            .map(|n| n.name().to_string())
            .filter(|n| *n != old && *n != new)
            .collect();
        assert_eq!(others.len(), 1);
        let followed = within(Duration::from_secs(10), || async {
            f.cluster.serving(&others[0]).await.is_ok()
        })
        .await;
        assert!(followed.is_some(), "{} does not follow {new}", others[0]);
        f.cluster
            .restart(&old, DataOnRestart::Keep)
            .await
            .expect("restart the old primary");
        f.cluster
            .wait_ready(Duration::from_secs(60))
            .await
            .expect("ready: one primary, two replicas running");
        assert_eq!(f.cluster.leader().await.unwrap().as_deref(), Some(&*new));
        drop(l);
        a.crash().await;
        b.crash().await;
    });
}
