//! The Redis recipe's known-broken strategies (`unsafe-del`, `unsafe-setnx-expire`; unsafe, for
//! calibration) against a real master: each scenario shows the mistake on the server's own
//! state, next to the correct herd on the same steps, which must not show it.

use std::future::Future;
use std::time::{Duration, Instant};

use lockbench::recipe::{LockError, Recipe, RecipeConfig, Strategy};
use redis::Value;

use super::redis_scenarios::{config, raw};

async fn get(endpoint: &str, key: &str) -> Value {
    raw(endpoint, redis::cmd("GET").arg(key)).await
}

async fn pttl(endpoint: &str, key: &str) -> i64 {
    match raw(endpoint, redis::cmd("PTTL").arg(key)).await {
        Value::Int(n) => n,
        other => panic!("PTTL {key}: {other:?}"),
    }
}

/// A holds past its 1 s TTL (no renewal), B takes the lock after expiry, then A releases late.
/// `unsafe-del`: A's plain `DEL` removes B's key and C is granted the lock while B is inside its
/// lease and was never told (granted twice). Herd: B's key is untouched and C cannot get in.
pub async fn stale_release<R, F, Fut>(make: &F, label: &str, strategy: Strategy, endpoint: &str)
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let cfg = config(
        &format!("/t/broken/{strategy}"),
        Duration::from_secs(1),
        false,
    );
    let key = format!("{}/stale", cfg.prefix);
    let (a, b, c) = (
        make(cfg.clone()).await,
        make(cfg.clone()).await,
        make(cfg.clone()).await,
    );
    let stale = a
        .acquire("stale", strategy, Instant::now() + Duration::from_secs(2))
        .await
        .expect("a acquires");
    let fresh = b
        .acquire("stale", strategy, Instant::now() + Duration::from_secs(3))
        .await
        .expect("b acquires once a's key expired");
    assert!(stale.lost.is_lost(), "{label}: a was told at its expiry");
    assert!(fresh.token > stale.token, "{label}: tokens grow");
    let before = get(endpoint, &key).await;
    assert!(
        matches!(before, Value::BulkString(_)),
        "{label}: b's key: {before:?}"
    );
    let released = a.release(stale).await;
    let after = get(endpoint, &key).await;
    // C tries at once, well inside B's one-second lease.
    let third = c
        .acquire(
            "stale",
            strategy,
            Instant::now() + Duration::from_millis(300),
        )
        .await;
    let b_told = fresh.lost.is_lost();
    println!(
        "{label}: stale release {released:?}; b's key before {before:?}, after {after:?}; \
         c: {:?}; b told lost: {b_told}",
        third.as_ref().map(|l| l.token)
    );
    if strategy == Strategy::UnsafeDel {
        assert!(
            released.is_ok(),
            "{label}: a plain DEL cannot tell: {released:?}"
        );
        assert_eq!(after, Value::Nil, "{label}: the stale DEL deleted b's key");
        let third = third.unwrap_or_else(|e| panic!("{label}: c gets the lock b holds: {e}"));
        assert!(
            !b_told,
            "{label}: b is inside its lease and never told while c holds"
        );
        assert!(third.token > fresh.token, "{label}: c's token is newer");
        let _ = c.release(third).await;
    } else {
        assert!(
            matches!(released, Ok(()) | Err(LockError::Lost { .. })),
            "{label}: {released:?}"
        );
        assert_eq!(after, before, "{label}: the stale release left b's key");
        assert!(
            matches!(third, Err(LockError::Timeout { .. })),
            "{label}: c must wait for b: {:?}",
            third.map(|l| l.token)
        );
    }
    let _ = b.release(fresh).await;
    a.crash().await;
    b.crash().await;
    c.crash().await;
}

/// Crash every acquisition: the first `SETNX` wins, the client dies before its `PEXPIRE`, and
/// the key stays with no TTL (PTTL −1); a second client's acquire times out however long it
/// waits (here 2.5× the TTL) and its give-up cleanup does not touch a key it does not own.
pub async fn setnx_crash_leaves_key_forever<R, F, Fut>(make: &F, label: &str, endpoint: &str)
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let mut crashing = config("/t/broken/setnx", Duration::from_secs(1), true);
    crashing.crash_between_steps_every = 1;
    let key = format!("{}/stuck", crashing.prefix);
    let a = make(crashing.clone()).await;
    let err = a
        .acquire(
            "stuck",
            Strategy::UnsafeSetnxExpire,
            Instant::now() + Duration::from_secs(2),
        )
        .await
        .expect_err("the acquisition dies between SETNX and PEXPIRE");
    assert!(err.is_indeterminate(), "{label}: an unknown outcome: {err}");
    assert!(
        err.to_string()
            .contains("simulated crash between SETNX and PEXPIRE"),
        "{label}: {err}"
    );
    assert_eq!(pttl(endpoint, &key).await, -1, "{label}: a key with no TTL");
    let b = make(RecipeConfig {
        crash_between_steps_every: 0,
        ..crashing.clone()
    })
    .await;
    let t = Instant::now();
    let r = b
        .acquire(
            "stuck",
            Strategy::UnsafeSetnxExpire,
            Instant::now() + crashing.ttl * 5 / 2,
        )
        .await;
    println!(
        "{label}: b after {:?}: {:?}; PTTL now {}",
        t.elapsed(),
        r.as_ref().map(|l| l.token),
        pttl(endpoint, &key).await
    );
    assert!(
        matches!(r, Err(LockError::Timeout { .. })),
        "{label}: nobody can lock a key that never expires: {:?}",
        r.map(|l| l.token)
    );
    assert_eq!(pttl(endpoint, &key).await, -1, "{label}: still stuck");
    // The correct herd on a key of its own ignores the crash setting: one atomic step.
    let herd = a
        .acquire(
            "herd-ignores-crashes",
            Strategy::Herd,
            Instant::now() + Duration::from_secs(2),
        )
        .await
        .expect("the herd has no step to crash between");
    a.release(herd).await.expect("herd release");
    raw(endpoint, redis::cmd("DEL").arg(&key)).await;
    a.crash().await;
    b.crash().await;
}

/// With no crashes the two steps make a lock: the key gets the TTL, a second client waits and
/// then gets it after the release, with a larger token.
pub async fn setnx_without_crashes_locks<R, F, Fut>(make: &F, label: &str, endpoint: &str)
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let cfg = config("/t/broken/setnx", Duration::from_secs(1), true);
    let key = format!("{}/works", cfg.prefix);
    let (a, b) = (make(cfg.clone()).await, make(cfg.clone()).await);
    let st = Strategy::UnsafeSetnxExpire;
    let first = a
        .acquire("works", st, Instant::now() + Duration::from_secs(2))
        .await
        .expect("a acquires");
    let left = pttl(endpoint, &key).await;
    assert!((1..=1000).contains(&left), "{label}: PTTL {left} ms");
    let blocked = b
        .acquire("works", st, Instant::now() + Duration::from_millis(300))
        .await;
    assert!(
        matches!(blocked, Err(LockError::Timeout { .. })),
        "{label}: b must wait while a holds: {:?}",
        blocked.map(|l| l.token)
    );
    let waiter = tokio::spawn(async move {
        let r = b
            .acquire("works", st, Instant::now() + Duration::from_secs(3))
            .await;
        (b, r)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let first_token = first.token;
    a.release(first).await.expect("a releases");
    let (b, second) = waiter.await.expect("waiter task");
    let second = second.expect("b acquires after the release");
    assert!(second.token > first_token, "{label}: tokens grow");
    let left = pttl(endpoint, &key).await;
    assert!(left > 0, "{label}: b's key has a TTL too: {left}");
    b.release(second).await.expect("b releases");
    assert_eq!(get(endpoint, &key).await, Value::Nil, "{label}: released");
    a.crash().await;
    b.crash().await;
}

/// Crash every 2nd acquisition of each client: the 1st and 3rd of one client lock and release,
/// the 2nd dies between the steps (its key stays without a TTL).
pub async fn setnx_every_nth_crashes<R, F, Fut>(make: &F, label: &str, endpoint: &str)
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let mut cfg = config("/t/broken/setnx-nth", Duration::from_secs(1), true);
    cfg.crash_between_steps_every = 2;
    let a = make(cfg.clone()).await;
    let mut outcomes = Vec::new();
    for n in 1..=3 {
        let k = format!("k{n}");
        let r = a
            .acquire(
                &k,
                Strategy::UnsafeSetnxExpire,
                Instant::now() + Duration::from_secs(2),
            )
            .await;
        let ttl = pttl(endpoint, &format!("{}/{k}", cfg.prefix)).await;
        outcomes.push((r.is_ok(), ttl > 0));
        if let Ok(l) = r {
            a.release(l).await.expect("release");
        }
    }
    assert_eq!(
        outcomes,
        [(true, true), (false, false), (true, true)],
        "{label}: (granted, key had a TTL) per acquisition"
    );
    raw(
        endpoint,
        redis::cmd("DEL").arg(format!("{}/k2", cfg.prefix)),
    )
    .await;
    a.crash().await;
}
