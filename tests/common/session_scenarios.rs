//! Scenarios both session-based recipes (ZooKeeper and etcd) must pass, written once against the
//! `Recipe` trait. Each test file passes a connect closure (`make(ttl)`) and, where a scenario
//! looks at the servers, a closure that does it the system's own way.

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

use lockbench::recipe::{Lease, LockError, Recipe, RecipeConfig, Strategy};

use super::contention::contend;

/// The namespace every key of these tests lives under.
pub const PREFIX: &str = "/lbtest";

/// The default config with `ttl`, under [`PREFIX`].
pub fn config(ttl: Duration) -> RecipeConfig {
    RecipeConfig {
        ttl,
        prefix: PREFIX.to_string(),
        ..RecipeConfig::default()
    }
}

/// 16 clients × 30 acquisitions per strategy: exclusion, wake-ups, FIFO, fencing.
/// `strategies` starts with herd and predecessor; every strategy but herd must grant in FIFO order.
pub async fn contention<R, F, Fut>(make: &F, system: &str, ttl: Duration, strategies: &[Strategy])
where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
{
    assert_eq!(strategies[..2], [Strategy::Herd, Strategy::Predecessor]);
    let mut wakeups = Vec::new();
    for &strategy in strategies {
        let clients = futures::future::join_all((0..16).map(|_| make(ttl))).await;
        let key = format!("mutex-{strategy}");
        let out = contend(clients, &key, strategy, 30).await;
        let label = format!("{system} {strategy} x16");
        eprintln!("{}", out.summary(&label));
        out.assert_exclusive(&label, 480);
        assert_eq!(out.holds.len(), 480);
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

/// A holder that crashes (no release, heartbeats stopped) loses the lock within its lease TTL
/// or session timeout (the lease's `ttl`) + 2 s.
pub async fn crash<R, F, Fut>(make: &F, system: &str, strategy: Strategy)
where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
{
    let key = format!("crash-{strategy}");
    let ttl = Duration::from_secs(2);
    let a = make(ttl).await;
    let b = make(ttl).await;
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
    let token = got.expect("b acquires after a crashed");
    let took = at - crashed;
    eprintln!("{system} {strategy} crash: lock passed on after {took:?} (ttl {lease_ttl:?})");
    assert!(
        took <= lease_ttl + Duration::from_secs(2),
        "lock passed on after {took:?}, over TTL + 2 s"
    );
    assert!(token > 0);
    b.crash().await;
}

/// How a system ends a holder's session or lease from outside, and what it promises then.
pub struct Expiry<E, S> {
    /// Ends the session or lease of the client holding the lock.
    pub expire: E,
    /// How long the holder may take to be told its lease is lost.
    pub told_within: Duration,
    /// How long another client may take to get the lock after that.
    pub regranted_within: Duration,
    /// Whether the stale release may return `Ok` (it must never touch the new holder's lock).
    pub stale_release_may_succeed: bool,
    /// Asserts that the lock on `key` on the server is still the one granted with this token.
    pub still_held: S,
}

/// Releasing a stale lease leaves the new holder's lock alone; the client whose session or
/// lease ended recovers with a new one at its next acquire.
pub async fn isolation<R, F, Fut, E, S>(make: &F, strategy: Strategy, expiry: &Expiry<E, S>)
where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
    E: AsyncFn(&R),
    S: AsyncFn(&str, u64),
{
    let key = format!("iso-{strategy}");
    let ttl = Duration::from_secs(2);
    let soon = || Instant::now() + Duration::from_secs(5);
    let (a, b, c) = (make(ttl).await, make(ttl).await, make(ttl).await);
    let mut stale = a.acquire(&key, strategy, soon()).await.expect("a acquires");
    (expiry.expire)(&a).await;
    tokio::time::timeout(expiry.told_within, stale.lost.wait())
        .await
        .expect("a's lease must be signalled lost when its session or lease ends");
    let fresh = b
        .acquire(&key, strategy, Instant::now() + expiry.regranted_within)
        .await
        .expect("b acquires after a's session or lease ended");
    assert!(fresh.token > stale.token);
    let r = a.release(stale).await;
    if expiry.stale_release_may_succeed {
        assert!(
            matches!(r, Ok(()) | Err(LockError::Lost { .. })),
            "stale release: {r:?}"
        );
    } else {
        assert!(
            matches!(r, Err(LockError::Lost { .. })),
            "stale release: {r:?}"
        );
    }
    (expiry.still_held)(&key, fresh.token).await;
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
    let l = a
        .acquire(&key, strategy, soon())
        .await
        .expect("a acquires again on a fresh session");
    a.release(l).await.expect("a releases");
    for r in [a, b, c] {
        r.crash().await;
    }
}

/// An acquire that times out leaves nothing behind. `entries(key)` lists what the server holds
/// for the lock; `settle` is how long the server may still be cleaning up after the timeout.
pub async fn deadline<R, F, Fut, L, T>(
    make: &F,
    strategy: Strategy,
    ttl: Duration,
    settle: Option<Duration>,
    entries: L,
) where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
    L: AsyncFn(&str) -> Vec<T>,
    T: PartialEq + Debug,
{
    let key = format!("deadline-{strategy}");
    let (a, b) = (make(ttl).await, make(ttl).await);
    let held = a
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let before = entries(&key).await;
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
    if let Some(settle) = settle {
        tokio::time::sleep(settle).await;
    }
    assert_eq!(entries(&key).await, before, "b left an entry behind");
    a.release(held).await.expect("a releases");
    assert!(entries(&key).await.is_empty(), "a left an entry behind");
    for r in [a, b] {
        r.crash().await;
    }
}

/// A holder that cannot reach the cluster is told its lock may be gone within its
/// TTL/session timeout, and the client works again once the cluster is back.
pub async fn lost_when_silent<R, F, Fut>(make: &F, system: &str, cluster: &lockbench::Cluster)
where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
{
    let key = "silent";
    let a = make(Duration::from_secs(3)).await;
    let mut held = acquire_predecessor(&a, key, Duration::from_secs(5))
        .await
        .expect("a acquires");
    // The lease TTL (etcd) or the negotiated session timeout (ZooKeeper).
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
    eprintln!("{system} silent cluster: holder told after {after:?} (ttl {ttl:?})");
    // The signal is due at most a TTL after the last heartbeat, which went out before
    // `frozen`; allow a little scheduling jitter on top.
    assert!(
        after <= ttl + Duration::from_millis(250),
        "told after {after:?}, past the TTL {ttl:?}: another client could already hold it"
    );
    let _ = a.release(held).await;
    let again = acquire_predecessor(&a, key, Duration::from_secs(20))
        .await
        .expect("a acquires again once the cluster is back");
    a.release(again).await.expect("a releases");
    a.crash().await;
}

/// `key` under the predecessor strategy, waiting at most `within`.
async fn acquire_predecessor<R: Recipe>(
    r: &R,
    key: &str,
    within: Duration,
) -> Result<Lease, LockError> {
    r.acquire(key, Strategy::Predecessor, Instant::now() + within)
        .await
}
