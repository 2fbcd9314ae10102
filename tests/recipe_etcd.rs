//! etcd lock recipes against a real 3-member cluster: mutual exclusion, herd vs predecessor
//! (and the server-side Lock) wake-ups, FIFO and fencing, crash, stale-release isolation and
//! deadlines. One cluster for every scenario (distinct keys), to keep CI time low.

mod common;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use etcd_client::GetOptions;
use futures::FutureExt;
use lockbench::System;
use lockbench::recipe::{EtcdRecipe, LockError, Recipe, RecipeConfig, Strategy};

const PREFIX: &str = "/lbtest";
const ALL: [Strategy; 3] = [Strategy::Herd, Strategy::Predecessor, Strategy::Native];

fn config(ttl: Duration) -> RecipeConfig {
    RecipeConfig {
        ttl,
        prefix: PREFIX.to_string(),
        ..RecipeConfig::default()
    }
}

async fn client(eps: &[String], ttl: Duration) -> EtcdRecipe {
    EtcdRecipe::connect(eps, config(ttl))
        .await
        .expect("connect to etcd")
}

async fn raw(eps: &[String]) -> etcd_client::Client {
    let urls: Vec<String> = eps.iter().map(|e| format!("http://{e}")).collect();
    etcd_client::Client::connect(urls, None)
        .await
        .expect("raw etcd client")
}

/// Every key of lock `key` (the herd key and the queue under it), with create revisions.
async fn keys(raw: &etcd_client::Client, key: &str) -> Vec<(String, i64)> {
    let mut c = raw.clone();
    let r = c
        .get(
            format!("{PREFIX}/{key}"),
            Some(GetOptions::new().with_prefix()),
        )
        .await
        .expect("get keys");
    r.kvs()
        .iter()
        .map(|kv| {
            (
                String::from_utf8_lossy(kv.key()).into_owned(),
                kv.create_revision(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_recipes() {
    let cluster = common::start(System::Etcd, Some(3)).await;
    let eps = cluster.endpoints();
    let run = AssertUnwindSafe(async {
        contention(&eps).await;
        for s in ALL {
            crash(&eps, s).await;
            isolation(&eps, s).await;
            deadline(&eps, s).await;
        }
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
    for strategy in ALL {
        let clients =
            futures::future::join_all((0..16).map(|_| client(eps, Duration::from_secs(10)))).await;
        let key = format!("mutex-{strategy}");
        let out = common::contention::contend(clients, &key, strategy, 30).await;
        eprintln!("{}", out.summary(&format!("etcd {strategy} x16")));
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
        if strategy != Strategy::Herd {
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

/// A holder that crashes (keep-alive stopped, no release) loses the lock within TTL + 2 s.
async fn crash(eps: &[String], strategy: Strategy) {
    let key = format!("crash-{strategy}");
    let ttl = Duration::from_secs(2);
    let a = client(eps, ttl).await;
    let b = client(eps, ttl).await;
    let lease = a
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let lease_ttl = lease.ttl;
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
    got.expect("b acquires after a crashed");
    let took = at - crashed;
    eprintln!("etcd {strategy} crash: lock passed on after {took:?} (lease TTL {lease_ttl:?})");
    assert!(
        took <= lease_ttl + Duration::from_secs(2),
        "lock passed on after {took:?}, over TTL + 2 s"
    );
    b.crash().await;
}

/// Releasing a stale lease leaves the new holder's key alone.
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
    // Expire a's lease early, as the server would after a missed TTL.
    let raw = raw(eps).await;
    let id = a.lease_id().await.expect("a has a lease");
    raw.clone()
        .lease_revoke(id)
        .await
        .expect("revoke a's lease");
    tokio::time::timeout(Duration::from_secs(5), stale.lost.wait())
        .await
        .expect("a's lease must be signalled lost when it is revoked");
    let fresh = b
        .acquire(&key, strategy, soon())
        .await
        .expect("b acquires after a's lease ended");
    assert!(fresh.token > stale.token);
    let r = a.release(stale).await;
    assert!(
        matches!(r, Err(LockError::Lost { .. })),
        "stale release: {r:?}"
    );
    let left = keys(&raw, &key).await;
    assert!(
        left.iter().any(|(_, rev)| *rev as u64 == fresh.token),
        "b's lock key must survive a's stale release: {left:?}"
    );
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

/// An acquire that times out leaves no key behind.
async fn deadline(eps: &[String], strategy: Strategy) {
    let key = format!("deadline-{strategy}");
    let ttl = Duration::from_secs(10);
    let (a, b) = (client(eps, ttl).await, client(eps, ttl).await);
    let held = a
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let raw = raw(eps).await;
    let before = keys(&raw, &key).await;
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
    // The server-side Lock may still be cleaning up when the RPC is cancelled: give it a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(keys(&raw, &key).await, before, "b left a key behind");
    a.release(held).await.expect("a releases");
    assert!(keys(&raw, &key).await.is_empty(), "a left a key behind");
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
    let ttl = held.ttl;
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
    eprintln!("etcd silent cluster: holder told after {after:?} (ttl {ttl:?})");
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
