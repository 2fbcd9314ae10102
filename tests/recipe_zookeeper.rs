//! ZooKeeper lock recipes against a real 3-node ensemble: mutual exclusion, herd vs
//! predecessor wake-ups, FIFO and fencing, crash, stale-release isolation and deadlines. One
//! ensemble for every scenario (distinct keys), to keep CI time low.

mod common;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::FutureExt;
use lockbench::System;
use lockbench::recipe::{LockError, Recipe, RecipeConfig, Strategy, ZookeeperRecipe};
use zookeeper_client as zk;

const PREFIX: &str = "/lbtest";

fn config(ttl: Duration) -> RecipeConfig {
    RecipeConfig {
        ttl,
        prefix: PREFIX.to_string(),
        ..RecipeConfig::default()
    }
}

async fn client(eps: &[String], ttl: Duration) -> ZookeeperRecipe {
    ZookeeperRecipe::connect(eps, config(ttl))
        .await
        .expect("connect to ZooKeeper")
}

async fn raw(eps: &[String]) -> zk::Client {
    zk::Client::connect(&eps.join(","))
        .await
        .expect("raw ZooKeeper client")
}

async fn children(raw: &zk::Client, key: &str) -> Vec<String> {
    let mut c = raw
        .list_children(&format!("{PREFIX}/{key}"))
        .await
        .unwrap_or_default();
    c.sort();
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn zookeeper_recipes() {
    let cluster = common::start(System::Zookeeper, Some(3)).await;
    let eps = cluster.endpoints();
    let run = AssertUnwindSafe(async {
        contention(&eps).await;
        for s in [Strategy::Herd, Strategy::Predecessor] {
            crash(&eps, s).await;
            isolation(&eps, s).await;
            deadline(&eps, s).await;
        }
        own_leftover(&eps).await;
        // Last: it freezes the whole cluster.
        lost_when_silent(&cluster, &eps).await;
    })
    .catch_unwind()
    .await;
    common::teardown_and_assert_gone(cluster).await;
    if let Err(panic) = run {
        std::panic::resume_unwind(panic);
    }
}

/// 16 clients × 30 acquisitions per strategy: exclusion, wake-ups, FIFO, fencing.
async fn contention(eps: &[String]) {
    let mut wakeups = Vec::new();
    for strategy in [Strategy::Herd, Strategy::Predecessor] {
        let clients =
            futures::future::join_all((0..16).map(|_| client(eps, Duration::from_secs(6)))).await;
        let key = format!("mutex-{strategy}");
        let out = common::contention::contend(clients, &key, strategy, 30).await;
        eprintln!("{}", out.summary(&format!("zookeeper {strategy} x16")));
        assert!(out.errors.is_empty(), "errors: {:?}", out.errors);
        assert_eq!(out.holds.len(), 480);
        assert_eq!(out.register, 480, "lost updates: mutual exclusion broken");
        assert!(
            out.overlaps().is_empty(),
            "overlapping holds: {:?}",
            out.overlaps()
        );
        assert_eq!(
            out.token_regressions(),
            0,
            "fencing tokens must grow with every grant"
        );
        if strategy == Strategy::Predecessor {
            assert_eq!(
                out.fifo_violations(),
                0,
                "grant order must equal queue order"
            );
        }
        wakeups.push(out.mean_wakeups());
    }
    assert!(
        wakeups[0] >= 4.0,
        "herd should wake many: {:.2}/acq",
        wakeups[0]
    );
    assert!(
        wakeups[1] <= 1.5,
        "predecessor should wake one: {:.2}/acq",
        wakeups[1]
    );
}

/// A holder that crashes loses the lock within its session timeout + 2 s.
async fn crash(eps: &[String], strategy: Strategy) {
    let key = format!("crash-{strategy}");
    let ttl = Duration::from_secs(2);
    let a = client(eps, ttl).await;
    let b = client(eps, ttl).await;
    let lease = a
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let session_timeout = a.session_timeout().await;
    let waiter = tokio::spawn(async move {
        let r = b
            .acquire(&key, strategy, Instant::now() + Duration::from_secs(15))
            .await;
        (r.map(|l| l.token), Instant::now(), b)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let crashed = Instant::now();
    a.crash().await;
    drop(lease);
    let (got, at, b) = waiter.await.expect("waiter task");
    let token = got.expect("b acquires after a crashed");
    let took = at - crashed;
    eprintln!(
        "zookeeper {strategy} crash: lock passed on after {took:?} (session {session_timeout:?})"
    );
    assert!(
        took <= session_timeout + Duration::from_secs(2),
        "lock passed on after {took:?}, over session timeout + 2 s"
    );
    assert!(token > 0);
    b.crash().await;
}

/// Releasing a stale lease leaves the new holder's node alone.
async fn isolation(eps: &[String], strategy: Strategy) {
    let key = format!("iso-{strategy}");
    let ttl = Duration::from_secs(2);
    let soon = || Instant::now() + Duration::from_secs(5);
    let (a, b, c) = (
        client(eps, ttl).await,
        client(eps, ttl).await,
        client(eps, ttl).await,
    );
    let mut stale = a.acquire(&key, strategy, soon()).await.expect("a acquires");
    // Expire a's session the classic way: open it from a second connection and close it.
    let thief = zk::Client::connector()
        .with_session(a.session_info().await)
        .connect(&eps.join(","))
        .await
        .expect("reopen a's session");
    drop(thief);
    tokio::time::timeout(Duration::from_secs(10), stale.lost.wait())
        .await
        .expect("a's lease must be signalled lost when its session ends");
    let fresh = b
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(10))
        .await
        .expect("b acquires after a's session ended");
    assert!(fresh.token > stale.token);
    let r = a.release(stale).await;
    assert!(
        matches!(r, Ok(()) | Err(LockError::Lost { .. })),
        "stale release: {r:?}"
    );
    let raw = raw(eps).await;
    let nodes = children(&raw, &key).await;
    let held = match strategy {
        Strategy::Herd => format!("{PREFIX}/{key}/lock"),
        _ => format!("{PREFIX}/{key}/{}", nodes.first().expect("b's node")),
    };
    let stat = raw
        .check_stat(&held)
        .await
        .expect("stat")
        .expect("b's lock node must survive a's stale release");
    assert_eq!(stat.czxid as u64, fresh.token, "the lock node must be b's");
    match c
        .acquire(&key, strategy, Instant::now() + Duration::from_millis(800))
        .await
    {
        Err(LockError::Timeout { .. }) => {}
        other => panic!("c must not get the lock while b holds it: {other:?}"),
    }
    b.release(fresh).await.expect("b releases");
    let l = c.acquire(&key, strategy, soon()).await.expect("c acquires");
    c.release(l).await.expect("c releases");
    // The client whose session/lease ended recovers with a new one at its next acquire.
    let l = a
        .acquire(&key, strategy, soon())
        .await
        .expect("a acquires again on a fresh session");
    a.release(l).await.expect("a releases");
    for r in [a, b, c] {
        r.crash().await;
    }
}

/// An acquire that times out leaves no node behind.
async fn deadline(eps: &[String], strategy: Strategy) {
    let key = format!("deadline-{strategy}");
    let ttl = Duration::from_secs(6);
    let (a, b) = (client(eps, ttl).await, client(eps, ttl).await);
    let held = a
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let raw = raw(eps).await;
    let before = children(&raw, &key).await;
    let t0 = Instant::now();
    match b
        .acquire(&key, strategy, Instant::now() + Duration::from_millis(500))
        .await
    {
        Err(LockError::Timeout { .. }) => {}
        other => panic!("b must time out: {other:?}"),
    }
    let waited = t0.elapsed();
    assert!(
        waited < Duration::from_millis(1500),
        "timed out late: {waited:?}"
    );
    assert_eq!(children(&raw, &key).await, before, "b left a node behind");
    a.release(held).await.expect("a releases");
    assert!(
        children(&raw, &key).await.is_empty(),
        "a left a node behind"
    );
    for r in [a, b] {
        r.crash().await;
    }
}

/// A holder that cannot reach the cluster is told its lock may be gone within its
/// TTL/session timeout, and the client works again once the cluster is back.
async fn lost_when_silent(cluster: &lockbench::Cluster, eps: &[String]) {
    let key = "silent";
    let a = client(eps, Duration::from_secs(3)).await;
    let mut held = a
        .acquire(
            key,
            Strategy::Predecessor,
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .expect("a acquires");
    let ttl = a.session_timeout().await;
    let names: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|n| n.name().to_string())
        .collect();
    for n in &names {
        cluster.pause(n).await.expect("pause");
    }
    let frozen = Instant::now();
    let told = tokio::time::timeout(ttl + Duration::from_secs(1), held.lost.wait()).await;
    let after = frozen.elapsed();
    for n in &names {
        cluster.resume(n).await.expect("resume");
    }
    assert!(
        told.is_ok(),
        "the holder must be told within its TTL ({ttl:?}) that the lock may be gone"
    );
    eprintln!("zookeeper silent cluster: holder told after {after:?} (ttl {ttl:?})");
    // The signal is due at most a TTL after the last heartbeat, which went out before
    // `frozen`; allow a little scheduling jitter on top.
    assert!(
        after <= ttl + Duration::from_millis(250),
        "told after {after:?}, past the TTL {ttl:?}: another client could already hold it"
    );
    let _ = a.release(held).await;
    let again = a
        .acquire(
            key,
            Strategy::Predecessor,
            Instant::now() + Duration::from_secs(20),
        )
        .await
        .expect("a acquires again once the cluster is back");
    a.release(again).await.expect("a releases");
    a.crash().await;
}

/// A queue node of our own session that a lost answer left behind (created here through a
/// second connection on the same session) must not make the client wait for itself.
async fn own_leftover(eps: &[String]) {
    let key = "leftover";
    let a = client(eps, Duration::from_secs(6)).await;
    let session = a.session_info().await;
    let twin = zk::Client::connector()
        .with_session(session.clone())
        // Detached, so that dropping it does not close a's session.
        .with_detached()
        .connect(&eps.join(","))
        .await
        .expect("second connection on a's session");
    let dir = format!("{PREFIX}/{key}");
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    raw(eps)
        .await
        .mkdir(&dir, &persistent)
        .await
        .expect("mkdir");
    // The two connections take the session from each other until the twin is gone: retry.
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let tag = format!("{:x}-", session.id().0 as u64);
    let mut made = Err(zk::Error::ConnectionLoss);
    for _ in 0..20 {
        made = twin
            .create(&format!("{dir}/{tag}lock-"), b"", &ephemeral)
            .await;
        if made.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    made.expect("leftover node");
    drop(twin);
    // Let a's client settle back on its session.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let lease = a
        .acquire(
            key,
            Strategy::Predecessor,
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .expect("a must not wait for its own leftover node");
    a.release(lease).await.expect("a releases");
    let raw = raw(eps).await;
    assert!(
        children(&raw, key).await.is_empty(),
        "the leftover must be gone"
    );
    a.crash().await;
}
