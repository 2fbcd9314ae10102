//! Scenarios both Redis recipes (Sentinel and Redlock) must pass, written once against the
//! `Recipe` trait; state on the servers is inspected with raw connections.

use std::future::Future;
use std::time::{Duration, Instant};

use lockbench::recipe::{Lease, LockError, Recipe, RecipeConfig, Strategy};

use super::contention::{Outcome, contend};

/// A config with a namespace of its own.
pub fn config(prefix: &str, ttl: Duration, renew: bool) -> RecipeConfig {
    RecipeConfig {
        ttl,
        renew,
        request_timeout: Duration::from_secs(2),
        prefix: prefix.to_string(),
        fallback_poll: Duration::from_millis(500),
        crash_between_steps_every: 0,
        ..RecipeConfig::default()
    }
}

/// Sentinel's `down-after-milliseconds` as the images start it (docker/redis/entrypoint.sh).
pub const SENTINEL_DOWN_MS: u64 = 1_000;

/// Sets how long the Sentinels of `cluster` wait before they call the master down.
pub async fn set_down_after(cluster: &lockbench::Cluster, ms: u64) {
    for ep in cluster.sentinel_endpoints() {
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("SET")
            .arg("mymaster")
            .arg("down-after-milliseconds")
            .arg(ms);
        raw(&ep, &cmd).await;
    }
}

/// A fresh connection to one server, with 2 s deadlines to connect and for each answer.
pub async fn connection(endpoint: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(format!("redis://{endpoint}/")).expect("redis url");
    let cfg = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect {endpoint}: {e}"))
}

/// One command on one server over a fresh connection, with deadlines.
pub async fn raw(endpoint: &str, cmd: &redis::Cmd) -> redis::Value {
    let mut con = connection(endpoint).await;
    cmd.query_async::<redis::Value>(&mut con)
        .await
        .unwrap_or_else(|e| panic!("{endpoint}: {e}"))
}

/// What the servers hold for one lock: (lock value, queue members, tentative members) per server.
pub async fn snapshot(
    endpoints: &[String],
    prefix: &str,
    key: &str,
) -> Vec<(redis::Value, redis::Value, redis::Value)> {
    let k = format!("{prefix}/{key}");
    let mut out = Vec::new();
    for e in endpoints {
        let lock = raw(e, redis::cmd("GET").arg(&k)).await;
        let queue = raw(e, redis::cmd("ZRANGE").arg(format!("{k}:q")).arg(0).arg(-1)).await;
        let tent = raw(e, redis::cmd("SMEMBERS").arg(format!("{k}:tent"))).await;
        out.push((lock, queue, tent));
    }
    out
}

/// Requests per acquisition a recipe must stay within in [`mutual_exclusion`] (16 contenders ×
/// 30 on one key, hold 1-5 ms), as (low, high) per strategy: measured values with room for a
/// noisy machine, so a spin loop or a retry storm fails.
#[derive(Debug, Clone, Copy)]
pub struct RequestBands {
    pub herd: (f64, f64),
    pub predecessor: (f64, f64),
}

impl RequestBands {
    fn of(&self, strategy: Strategy) -> (f64, f64) {
        match strategy {
            Strategy::Predecessor => self.predecessor,
            _ => self.herd,
        }
    }
}

/// The scenarios both recipes share. Each runs for one strategy (the last two for
/// predecessor only) under the label `<system>/<strategy>`, each strategy on a prefix of its
/// own, each scenario on keys of its own.
#[derive(Debug, Clone, Copy)]
pub enum Common {
    MutualExclusion,
    OneClientTwoKeys,
    CrashFreesWithinTtl,
    StaleReleaseIsHarmless,
    TimeoutLeavesNothing,
    WakeupsSurviveAPubsubKill,
    WatchdogReportsAStolenLock,
    DeadWaiterDoesNotBlockQueue,
    QueuedWaitersDoNotPoll,
    DeafWaitersPoll,
}

/// Runs shared scenario `scenario` for `st`; `endpoints` are the servers that hold the locks.
pub async fn common<R, F, Fut>(
    make: &F,
    system: &str,
    scenario: Common,
    st: Strategy,
    endpoints: &[String],
    bands: RequestBands,
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let label = format!("{system}/{st}");
    let prefix = format!("/t/{st}");
    let cfg = |ttl: u64, renew: bool| config(&prefix, Duration::from_secs(ttl), renew);
    let (make, label) = (make, label.as_str());
    match scenario {
        Common::MutualExclusion => {
            mutual_exclusion(make, label, cfg(10, true), st, bands.of(st)).await;
        }
        Common::OneClientTwoKeys => {
            one_client_two_keys(make, label, cfg(2, true), st, endpoints).await
        }
        Common::CrashFreesWithinTtl => {
            crash_frees_within_ttl(make, label, cfg(2, true), st, endpoints).await
        }
        Common::StaleReleaseIsHarmless => {
            stale_release_is_harmless(make, label, cfg(1, false), st, endpoints).await
        }
        Common::TimeoutLeavesNothing => {
            timeout_leaves_nothing(make, label, cfg(10, true), st, endpoints).await
        }
        Common::WakeupsSurviveAPubsubKill => {
            wakeups_survive_a_pubsub_kill(make, label, cfg(10, true), st, endpoints).await
        }
        Common::WatchdogReportsAStolenLock => {
            watchdog_reports_a_stolen_lock(make, label, cfg(3, true), st, endpoints).await
        }
        Common::DeadWaiterDoesNotBlockQueue => {
            let mut quick = config("/t/dead", Duration::from_secs(10), true);
            quick.fallback_poll = Duration::from_millis(200);
            quick.request_timeout = Duration::from_secs(1);
            dead_waiter_does_not_block_queue(make, label, quick).await
        }
        Common::QueuedWaitersDoNotPoll => {
            let cfg = config("/t/queued", Duration::from_secs(10), true);
            queued_waiters_do_not_poll(make, label, cfg).await
        }
        Common::DeafWaitersPoll => {
            let cfg = config("/t/deaf", Duration::from_secs(10), true);
            deaf_waiters_poll(make, label, cfg, endpoints).await
        }
    }
}

/// One `#[test]` per shared scenario and strategy in the calling test file (`herd::<scenario>`,
/// `predecessor::<scenario>`), each calling `$run(scenario, strategy)`, so `cargo test --test
/// <file> <scenario>` runs one scenario for both strategies. The calling file has `Strategy`
/// and `$run` in scope.
// Every test binary compiles `common`; only the two Redis ones use this.
#[allow(unused_macros)]
macro_rules! common_tests {
    ($run:ident) => {
        $crate::common::redis_scenarios::common_tests!(
            @each_strategy $run,
            [
                mutual_exclusion: MutualExclusion,
                one_client_two_keys: OneClientTwoKeys,
                crash_frees_within_ttl: CrashFreesWithinTtl,
                stale_release_is_harmless: StaleReleaseIsHarmless,
                timeout_leaves_nothing: TimeoutLeavesNothing,
                wakeups_survive_a_pubsub_kill: WakeupsSurviveAPubsubKill,
                watchdog_reports_a_stolen_lock: WatchdogReportsAStolenLock,
            ]
        );
        #[test]
        fn dead_waiter_does_not_block_queue() {
            use $crate::common::redis_scenarios::Common;
            $run(Common::DeadWaiterDoesNotBlockQueue, Strategy::Predecessor);
        }
        #[test]
        fn queued_waiters_do_not_poll() {
            use $crate::common::redis_scenarios::Common;
            $run(Common::QueuedWaitersDoNotPoll, Strategy::Predecessor);
        }
        #[test]
        fn deaf_waiters_poll() {
            use $crate::common::redis_scenarios::Common;
            $run(Common::DeafWaitersPoll, Strategy::Predecessor);
        }
    };
    (@each_strategy $run:ident, [$($name:ident: $variant:ident,)*]) => {
        mod herd {
            use super::*;
            $(
                #[test]
                fn $name() {
                    $run($crate::common::redis_scenarios::Common::$variant, Strategy::Herd);
                }
            )*
        }
        mod predecessor {
            use super::*;
            $(
                #[test]
                fn $name() {
                    $run(
                        $crate::common::redis_scenarios::Common::$variant,
                        Strategy::Predecessor,
                    );
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use common_tests;

/// 16 contenders x 30 acquisitions: exact register, no overlap, no errors, growing tokens,
/// requests per acquisition within `requests`; for predecessor also FIFO grants, one wake-up per
/// handoff (at least 0.8 on average: handoffs are served by the wake-up, not by polls; at most
/// one each but for the queue's corrections, see below) and handoff p99 below the fallback poll;
/// for herd at least 4 wake-ups per acquisition. Returns the outcome for further checks.
///
/// A queue's correction makes a waiter first without a release and tells it with a queue prompt,
/// which the tally counts apart: a Redlock waiter whose tentative ticket headed a master's queue
/// finalises it behind another waiter, or dead entries ahead are dropped. The waiter so told may
/// have heard the release that freed the lock as well, so the wake-ups over the handoffs may
/// exceed one each by the prompts received, and with none (the common case) by nothing.
pub async fn mutual_exclusion<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    requests: (f64, f64),
) -> Outcome
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let mut clients = Vec::new();
    for _ in 0..16 {
        clients.push(make(cfg.clone()).await);
    }
    let out = contend(clients, "mutex", strategy, 30).await;
    println!("{}", out.summary(label));
    let p99 = out.handoff_percentile(0.99);
    let (excess, corrections) = out.excess_wakeups();
    println!(
        "{label}: {} handoffs, wake-ups per handoff {:?} ({excess} beyond one each, queue corrections {corrections}), handoff p50 {:?} p99 {p99:?}, fallback polls {}",
        out.handoffs().len(),
        out.wakeups_per_handoff(),
        out.handoff_percentile(0.5),
        out.total_fallback_polls()
    );
    out.assert_exclusive(label, 480);
    let r = out.mean_requests();
    assert!(
        (requests.0..=requests.1).contains(&r),
        "{label}: {r:.2} requests per acquisition, outside {requests:?}"
    );
    if strategy == Strategy::Predecessor {
        assert_eq!(
            out.fifo_violations(),
            0,
            "{label}: grants out of queue order"
        );
        let w = out.wakeups_per_handoff().expect("16 contenders hand off");
        assert!(
            w >= 0.8,
            "{label}: {w:.3} wake-ups per handoff: handoffs served by polls, not wake-ups"
        );
        assert!(
            excess <= corrections as i64,
            "{label}: {w:.3} wake-ups per handoff, {excess} beyond one each with {corrections} \
             queue corrections (one release wakes one waiter)"
        );
        // A release's message counted as a correction would pass the bound above unseen; the
        // masters' queues agree but for a rare tentative head or a dead entry.
        assert!(
            corrections * 10 <= out.handoffs().len() as u64,
            "{label}: {corrections} queue corrections in {} handoffs",
            out.handoffs().len()
        );
        assert!(
            p99 < cfg.fallback_poll,
            "{label}: handoff p99 {p99:?}, not below the fallback poll {:?}",
            cfg.fallback_poll
        );
    } else {
        assert!(
            out.mean_wakeups() >= 4.0,
            "{label}: only {:.2} wakeups per acquisition",
            out.mean_wakeups()
        );
    }
    out
}

/// Asserts a fresh lease's validity arithmetic: its `ttl` is at most TTL − drift (the server
/// may have started the TTL as the request left) and at least that less `took`, the acquire
/// call's duration (which contains the granting round trip).
pub fn assert_validity(
    label: &str,
    lease: &lockbench::recipe::Lease,
    ttl: Duration,
    took: Duration,
) {
    let most = ttl - drift(ttl);
    assert!(
        lease.ttl <= most,
        "{label}: lease ttl {:?} above TTL − drift {most:?}",
        lease.ttl
    );
    assert!(
        lease.ttl + took >= most,
        "{label}: lease ttl {:?} below TTL − drift − the acquire's {took:?}",
        lease.ttl
    );
}

/// A client holding `first` waits for `second` (held by another client for 1.5 × TTL) and gets
/// it: its lease on `first` stays held meanwhile (renewed, no lost signal, the key still on a
/// majority of servers), and both leases release cleanly.
pub async fn one_client_two_keys<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    endpoints: &[String],
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let ttl = cfg.ttl;
    let a = make(cfg.clone()).await;
    let b = make(cfg.clone()).await;
    let deadline = || Instant::now() + Duration::from_secs(5);
    let held_by_b = b
        .acquire("second", strategy, deadline())
        .await
        .expect("b takes second");
    let t0 = Instant::now();
    let first = a
        .acquire("first", strategy, deadline())
        .await
        .expect("a takes first");
    assert_validity(label, &first, ttl, t0.elapsed());
    let b_lets_go = async {
        tokio::time::sleep(ttl * 3 / 2).await;
        b.release(held_by_b).await
    };
    let (second, released) = tokio::join!(
        a.acquire("second", strategy, Instant::now() + ttl * 4),
        b_lets_go
    );
    released.expect("b releases second");
    let second = second.unwrap_or_else(|e| panic!("{label}: a never got second: {e}"));
    assert!(
        !first.lost.is_lost(),
        "{label}: a's lease on first was reported lost while it waited for second"
    );
    let k = format!("{}/first", cfg.prefix);
    let mut holding = 0;
    for e in endpoints {
        if raw(e, redis::cmd("EXISTS").arg(&k)).await == redis::Value::Int(1) {
            holding += 1;
        }
    }
    assert!(
        holding > endpoints.len() / 2,
        "{label}: first is on only {holding} of {} servers after {:?}",
        endpoints.len(),
        ttl * 3 / 2
    );
    a.release(second).await.expect("a releases second");
    a.release(first)
        .await
        .expect("a releases first, still its own");
    a.crash().await;
    b.crash().await;
}

/// A renewing holder keeps the lock past its TTL, then crashes: a waiter gets it within TTL + 2 s.
pub async fn crash_frees_within_ttl<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    endpoints: &[String],
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let ttl = cfg.ttl;
    let holder = make(cfg.clone()).await;
    let waiter = make(cfg.clone()).await;
    let lease = holder
        .acquire("crash", strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("holder acquires");
    tokio::time::sleep(ttl + ttl / 2).await;
    assert!(
        !lease.lost.is_lost(),
        "{label}: the watchdog should have kept the lease"
    );
    let still: Vec<_> = snapshot(endpoints, &cfg.prefix, "crash")
        .await
        .into_iter()
        .filter(|s| s.0 != redis::Value::Nil)
        .collect();
    assert!(
        !still.is_empty(),
        "{label}: the lock vanished although renewal is on"
    );
    let crashed_at = Instant::now();
    holder.crash().await;
    drop(lease);
    let got = waiter
        .acquire("crash", strategy, crashed_at + ttl + Duration::from_secs(5))
        .await;
    let took = crashed_at.elapsed();
    println!("{label}: crashed holder's lock taken over after {took:?} (ttl {ttl:?})");
    let got = got.unwrap_or_else(|e| panic!("{label}: waiter never got the lock: {e}"));
    assert!(
        took <= ttl + Duration::from_secs(2),
        "{label}: took {took:?}"
    );
    waiter.release(got).await.expect("release");
    waiter.crash().await;
}

/// Releasing a stale lease (expired, re-granted) leaves the new holder's lock as it was.
pub async fn stale_release_is_harmless<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    endpoints: &[String],
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let a = make(cfg.clone()).await;
    let b = make(cfg.clone()).await;
    let stale = a
        .acquire("stale", strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let fresh = b
        .acquire("stale", strategy, Instant::now() + cfg.ttl * 3)
        .await
        .expect("b acquires after expiry");
    assert!(
        fresh.token > stale.token,
        "{label}: token {} after {}",
        fresh.token,
        stale.token
    );
    assert!(
        stale.lost.is_lost(),
        "{label}: without renewal the lost signal fires at expiry"
    );
    let before = snapshot(endpoints, &cfg.prefix, "stale").await;
    match a.release(stale).await {
        Ok(()) | Err(LockError::Lost { .. }) => {}
        Err(e) => panic!("{label}: stale release failed oddly: {e}"),
    }
    let after = snapshot(endpoints, &cfg.prefix, "stale").await;
    // The new holder's value is the one most servers hold. A Redlock master that answered the
    // stale holder's round too late still granted it (the command was on its way), so that
    // master may still carry the stale key and the stale holder's queue entry (its entry's
    // expiry there counts from that late grant), which its own release rightly deletes: only
    // the new holder's keys and queue entries must be untouched (CI saw a master's queue go
    // from [stale, new] to [new]).
    let values: Vec<&redis::Value> = before
        .iter()
        .map(|s| &s.0)
        .filter(|v| **v != redis::Value::Nil)
        .collect();
    let holder = *values
        .iter()
        .max_by_key(|v| values.iter().filter(|w| w == v).count())
        .unwrap_or_else(|| panic!("{label}: new holder has no lock"));
    for (b, a) in before.iter().zip(&after) {
        if &b.0 == holder {
            assert_eq!(
                b, a,
                "{label}: a stale release changed the new holder's lock"
            );
        } else {
            for (was, is) in [(&b.1, &a.1), (&b.2, &a.2)] {
                assert!(
                    is == was || *is == without_others_than(was, holder),
                    "{label}: a stale release changed a queue beyond its own entry ({was:?} became {is:?})"
                );
            }
        }
    }
    b.release(fresh).await.expect("new holder releases");
    a.crash().await;
    b.crash().await;
}

/// `entries` (a queue's or the tentative set's members, as read back) with only the entries of
/// `holder` (an owner value) kept: what a stale holder's release leaves of them where it took
/// its own entry out (a scenario with one stale holder and one new one).
fn without_others_than(entries: &redis::Value, holder: &redis::Value) -> redis::Value {
    match entries {
        redis::Value::Array(items) => {
            redis::Value::Array(items.iter().filter(|e| *e == holder).cloned().collect())
        }
        other => other.clone(),
    }
}

/// An acquire that times out leaves no key or queue entry of its own behind.
pub async fn timeout_leaves_nothing<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    endpoints: &[String],
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let key = format!("deadline-{strategy}");
    let holder = make(cfg.clone()).await;
    let waiter = make(cfg.clone()).await;
    let lease = holder
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("holder");
    let before = snapshot(endpoints, &cfg.prefix, &key).await;
    let r = waiter
        .acquire(&key, strategy, Instant::now() + Duration::from_millis(300))
        .await;
    assert!(
        matches!(r, Err(LockError::Timeout { .. })),
        "{label}: expected a timeout, got {r:?}"
    );
    let after = snapshot(endpoints, &cfg.prefix, &key).await;
    assert_eq!(
        before, after,
        "{label}: the timed-out waiter left something behind"
    );
    holder.release(lease).await.expect("release");
    let k = format!("{}/{key}", cfg.prefix);
    for e in endpoints {
        for suffix in ["", ":q", ":qx", ":tent"] {
            let v = raw(e, redis::cmd("EXISTS").arg(format!("{k}{suffix}"))).await;
            assert_eq!(v, redis::Value::Int(0), "{label}: {k}{suffix} left on {e}");
        }
    }
    holder.crash().await;
    waiter.crash().await;
}

/// A queued waiter that dies (its acquire dropped mid-wait, its client gone) stops blocking the
/// queue once its entry expires: the waiter behind it gets the lock after the release.
pub async fn dead_waiter_does_not_block_queue<R, F, Fut>(make: &F, label: &str, cfg: RecipeConfig)
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let strategy = Strategy::Predecessor;
    let holder = make(cfg.clone()).await;
    let lease = holder
        .acquire(
            "dead-waiter",
            strategy,
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .expect("holder");
    let dead = std::sync::Arc::new(make(cfg.clone()).await);
    let task = tokio::spawn({
        let dead = dead.clone();
        async move {
            dead.acquire(
                "dead-waiter",
                strategy,
                Instant::now() + Duration::from_secs(60),
            )
            .await
            .map(|_| ())
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    task.abort();
    let _ = task.await;
    if let Ok(dead) = std::sync::Arc::try_unwrap(dead) {
        dead.crash().await;
    }
    let next = std::sync::Arc::new(make(cfg.clone()).await);
    let waiting = tokio::spawn({
        let next = next.clone();
        async move {
            next.acquire(
                "dead-waiter",
                strategy,
                Instant::now() + Duration::from_secs(30),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    holder.release(lease).await.expect("release");
    let got = waiting
        .await
        .expect("task")
        .unwrap_or_else(|e| panic!("{label}: queue stuck behind a dead waiter: {e}"));
    let took = released.elapsed();
    let entry_ttl = cfg.fallback_poll * 3 + cfg.request_timeout * 2;
    println!("{label}: dead queued waiter skipped after {took:?} (queue entry ttl {entry_ttl:?})");
    assert!(
        took <= entry_ttl + Duration::from_secs(2),
        "{label}: took {took:?}"
    );
    next.release(got).await.expect("release");
    holder.crash().await;
    if let Ok(next) = std::sync::Arc::try_unwrap(next) {
        next.crash().await;
    }
}

/// The watchdog notices within one renewal period that the lock is no longer ours (here: deleted
/// behind its back on every server) and fires the lease's lost signal.
pub async fn watchdog_reports_a_stolen_lock<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    endpoints: &[String],
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let client = make(cfg.clone()).await;
    let mut lease = client
        .acquire("stolen", strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("acquire");
    let k = format!("{}/stolen", cfg.prefix);
    for e in endpoints {
        raw(e, redis::cmd("DEL").arg(&k)).await;
    }
    let t0 = Instant::now();
    let fired = tokio::time::timeout(cfg.ttl / 3 + Duration::from_secs(1), lease.lost.wait()).await;
    println!(
        "{label}: watchdog reported the stolen lock after {:?}",
        t0.elapsed()
    );
    assert!(fired.is_ok(), "{label}: lost signal did not fire");
    assert!(
        matches!(client.release(lease).await, Err(LockError::Lost { .. })),
        "{label}: release of a stolen lock must say Lost"
    );
    client.crash().await;
}

/// The Redlock spec's clock-drift allowance, as the recipes subtract it: 1 % of the TTL + 2 ms.
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// Polls `key`'s PTTL on `endpoint` every 5 ms until it jumps up (a watchdog renewal landed),
/// for at most `within`; returns a lower bound of the key's server-side expiry then: the send
/// time of the read that saw the jump plus the PTTL it answered.
pub async fn wait_for_renewal(endpoint: &str, key: &str, within: Duration) -> Instant {
    let client = redis::Client::open(format!("redis://{endpoint}/")).expect("redis url");
    let cfg = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    let mut con = client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect {endpoint}: {e}"));
    let until = Instant::now() + within;
    let mut last: Option<i64> = None;
    while Instant::now() < until {
        let sent = Instant::now();
        let pttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut con)
            .await
            .unwrap_or_else(|e| panic!("{endpoint}: {e}"));
        assert!(pttl > 0, "{key} has no TTL on {endpoint}: {pttl}");
        // A renewal puts the TTL back up; polling alone only sees it shrink.
        if last.is_some_and(|l| pttl > l + 20) {
            return sent + Duration::from_millis(pttl as u64);
        }
        last = Some(pttl);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no renewal of {key} on {endpoint} within {within:?}");
}

/// Timer and scheduling lateness allowed on a loaded 2-core machine when a signal must come
/// by a deadline; the watchdog bug these tests guard against was about TTL/3 late.
pub const LATE: Duration = Duration::from_millis(30);

/// A renewing holder whose servers stop answering (`pause`, a majority of them for Redlock)
/// right after a renewal: the lost signal comes no later than the key's server-side expiry
/// (`probe` is a paused server), and not a renewal period before the validity's end either.
pub async fn lost_before_expiry_when_paused<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    probe: &str,
    pause: impl Future<Output = ()>,
    resume: impl Future<Output = ()>,
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let ttl = cfg.ttl;
    let client = make(cfg.clone()).await;
    let mut lease = client
        .acquire(
            "paused-holder",
            Strategy::Herd,
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .expect("acquire");
    let key = format!("{}/paused-holder", cfg.prefix);
    // Right after a renewal is the worst moment: a watchdog that finds out only on its next
    // attempts, or counts from a reply, reports the loss up to a renewal period late.
    let expiry_floor = wait_for_renewal(probe, &key, ttl).await;
    let paused_at = Instant::now();
    pause.await;
    let fired = tokio::time::timeout(ttl * 2, lease.lost.wait()).await;
    // The instant the holder counts its lease lost from, by the clock (what `is_lost` reads
    // before an access), not when a loaded machine woke this task: 35.9 ms after the key's
    // expiry once, beside another test binary.
    let lost_at = lease
        .lost
        .valid_until()
        .expect("a renewed lease is lost by the clock");
    resume.await;
    let after_pause = lost_at.saturating_duration_since(paused_at);
    println!(
        "{label}: ttl {ttl:?}: lost signalled {after_pause:?} after the pause, {:?} before the key's expiry",
        expiry_floor.checked_duration_since(lost_at)
    );
    assert!(fired.is_ok(), "{label}: no lost signal within 2 × TTL");
    assert!(
        lost_at <= expiry_floor + LATE,
        "{label}: ttl {ttl:?}: lost signalled {:?} after the key expired on the server",
        lost_at - expiry_floor
    );
    assert!(
        after_pause <= ttl - drift(ttl) + LATE,
        "{label}: ttl {ttl:?}: lost signalled {after_pause:?} after the pause, past TTL − drift"
    );
    assert!(
        after_pause >= ttl - drift(ttl) - ttl / 3,
        "{label}: ttl {ttl:?}: lost signalled already {after_pause:?} after the pause"
    );
    let _ = client.release(lease).await;
    client.crash().await;
}

/// Kills every pub/sub connection on `endpoint` but Sentinel's (`CLIENT KILL ID` for each client
/// `CLIENT LIST TYPE pubsub` names): with its hello-channel link gone a Sentinel counts the
/// master unreachable since its last PING reply, and with a 1 s down-after that can start a
/// failover (seen once). Returns how many it killed.
pub async fn kill_pubsub_clients(endpoint: &str) -> usize {
    let list = raw(
        endpoint,
        redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("pubsub"),
    )
    .await;
    let list: String = redis::from_redis_value_ref(&list).expect("CLIENT LIST is text");
    let mut killed = 0;
    for line in list.lines() {
        let field = |k: &str| {
            line.split(' ')
                .find_map(|f| f.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .unwrap_or_default()
                .to_string()
        };
        if field("name").starts_with("sentinel-") {
            continue;
        }
        raw(
            endpoint,
            redis::cmd("CLIENT").arg("KILL").arg("ID").arg(field("id")),
        )
        .await;
        killed += 1;
    }
    killed
}

/// 8 contenders × 40 while the clients' pub/sub connections on the servers are killed twice
/// ([`kill_pubsub_clients`], 0.7 s apart): the handoffs after the kill are still woken by
/// messages, not by the 500 ms fallback poll.
pub async fn wakeups_survive_a_pubsub_kill<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    endpoints: &[String],
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(make(cfg.clone()).await);
    }
    let killer = async {
        let mut kills = Vec::new();
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let at = Instant::now();
            let mut killed = 0;
            for e in endpoints {
                killed += kill_pubsub_clients(e).await;
            }
            kills.push((at, killed));
        }
        kills
    };
    let (out, kills) = tokio::join!(contend(clients, "pubsub-kill", strategy, 40), killer);
    println!("{}", out.summary(label));
    let killed: usize = kills.iter().map(|k| k.1).sum();
    assert!(
        killed >= 8,
        "{label}: only {killed} pub/sub connections killed"
    );
    let kills: Vec<Instant> = kills.into_iter().map(|k| k.0).collect();
    out.assert_exclusive(label, 320);
    let killed = kills[0];
    let mut after: Vec<Duration> = out
        .handoffs()
        .into_iter()
        .filter(|(h, _)| h.acquired > killed)
        .map(|(_, d)| d)
        .collect();
    after.sort();
    let polls: u64 = out
        .holds
        .iter()
        .filter(|h| h.acquired > killed)
        .map(|h| h.fallback_polls)
        .sum();
    let p99 = after
        .get(((after.len().max(1) - 1) as f64 * 0.99).round() as usize)
        .copied()
        .unwrap_or_default();
    println!(
        "{label}: after the pub/sub kill: {} handoffs, p99 {p99:?}, {polls} fallback polls",
        after.len()
    );
    // The herd hands off less often (a releaser that asks again at once often wins).
    assert!(
        after.len() >= 5,
        "{label}: only {} handoffs after the kill (contention ended too soon to tell)",
        after.len()
    );
    assert!(
        polls <= 2,
        "{label}: {polls} fallback polls after the pub/sub kill"
    );
    assert!(
        p99 < Duration::from_millis(250),
        "{label}: handoff p99 {p99:?} after the pub/sub kill (fallback poll 500 ms)"
    );
}

/// A client that takes `key` first (predecessor, within 5 s), and its lease.
pub async fn first_holder<R, F, Fut>(make: &F, cfg: &RecipeConfig, key: &str) -> (R, Lease)
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let holder = make(cfg.clone()).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let lease = holder
        .acquire(key, Strategy::Predecessor, deadline)
        .await
        .expect("holder");
    (holder, lease)
}

/// `n` predecessor waiters for `key`, each on its own client, queued in a known order (100 ms
/// apart, each behind the one before), each releasing what it gets: per waiter, whether it
/// acquired (within 20 s), its requests and its fallback polls.
pub async fn queue_waiters<R, F, Fut>(
    make: &F,
    cfg: &RecipeConfig,
    key: &'static str,
    n: usize,
) -> Vec<tokio::task::JoinHandle<(bool, u64, u64)>>
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let mut waiters = Vec::new();
    for _ in 0..n {
        let c = make(cfg.clone()).await;
        waiters.push(tokio::spawn(async move {
            let tally = lockbench::recipe::Tally::default();
            let deadline = Instant::now() + Duration::from_secs(20);
            let r = c
                .acquire_counted(key, Strategy::Predecessor, deadline, &tally)
                .await;
            let acquired = r.is_ok();
            if let Ok(lease) = r {
                let _ = c.release(lease).await;
            }
            c.crash().await;
            (acquired, tally.request_count(), tally.fallback_poll_count())
        }));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    waiters
}

/// Four waiters queue behind a 3 s hold. Only the first of them expects a message any moment and
/// polls every 500 ms; the others, with waiters ahead, refresh their entries every third of the
/// entry TTL (1.83 s here) and are not fallback polls. Every waiter polling every 500 ms would
/// make 4 × 6.
pub async fn queued_waiters_do_not_poll<R, F, Fut>(make: &F, label: &str, cfg: RecipeConfig)
where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let key = "long-hold";
    let (holder, lease) = first_holder(make, &cfg, key).await;
    let waiters = queue_waiters(make, &cfg, key, 4).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    holder.release(lease).await.expect("release");
    holder.crash().await;
    let mut counts = Vec::new();
    for w in waiters {
        let (_, requests, polls) = w.await.expect("waiter task");
        counts.push((requests, polls));
    }
    let polls: u64 = counts.iter().map(|c| c.1).sum();
    println!("{label}: (requests, fallback polls) of 4 waiters behind a 3 s hold: {counts:?}");
    assert!(
        polls <= 8,
        "{label}: {polls} fallback polls behind a 3 s hold (the head alone makes about 6)"
    );
}

/// Allows (`on`) or refuses the default user's SUBSCRIBE on every server in `endpoints`; PUBLISH,
/// which every release sends, stays allowed, as do the subscriptions made before.
pub async fn allow_subscribe(endpoints: &[String], on: bool) {
    let rule = if on { "+subscribe" } else { "-subscribe" };
    for e in endpoints {
        raw(e, redis::cmd("ACL").arg("SETUSER").arg("default").arg(rule)).await;
    }
}

/// Four waiters queue behind a 3 s hold on servers that refuse SUBSCRIBE (as a loaded server may
/// fail to answer one in time, or an ACL forbids it): no release can wake them, so each asks
/// again at the fallback poll (500 ms), counted, whatever its place in the queue. A waiter with
/// others ahead that refreshed its entry every third of the entry TTL (1.83 s here), as a
/// subscribed one does, would hear nothing the whole time: about 6 polls each during the hold,
/// against 0 for the three behind the head.
pub async fn deaf_waiters_poll<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    endpoints: &[String],
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let key = "deaf";
    let (holder, lease) = first_holder(make, &cfg, key).await;
    allow_subscribe(endpoints, false).await;
    let mut refused = Vec::new();
    for e in endpoints {
        let client = redis::Client::open(format!("redis://{e}/")).expect("redis url");
        let answer = match client.get_async_pubsub().await {
            Ok(mut p) => p.subscribe("deaf-probe").await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        refused.push(answer);
    }
    let waiters = queue_waiters(make, &cfg, key, 4).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let released = holder.release(lease).await;
    holder.crash().await;
    let mut counts = Vec::new();
    for w in waiters {
        let (acquired, _, polls) = w.await.expect("waiter task");
        counts.push((acquired, polls));
    }
    // Allowed again before any assertion, so the next scenario on these servers can subscribe.
    allow_subscribe(endpoints, true).await;
    println!("{label}: (acquired, fallback polls) of 4 deaf waiters behind a 3 s hold: {counts:?}");
    assert!(
        refused.iter().all(|r| r
            .as_ref()
            .is_err_and(|e| e.to_lowercase().contains("noperm"))),
        "{label}: a server took a SUBSCRIBE its ACL refuses: {refused:?}"
    );
    released.expect("release");
    for (i, (acquired, polls)) in counts.iter().enumerate() {
        assert!(acquired, "{label}: deaf waiter {i} never acquired");
        assert!(
            *polls >= 3,
            "{label}: deaf waiter {i} made {polls} fallback polls in a 3 s hold (500 ms each)"
        );
    }
}

/// What `key` holds on `endpoints` that is not `allowed`'s (`None`: nobody's): a lock value, a
/// queue entry or a tentative entry, each named with its server.
pub async fn strays(
    endpoints: &[String],
    prefix: &str,
    key: &str,
    allowed: Option<&str>,
) -> Vec<String> {
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    let mut out = Vec::new();
    for (e, (lock, queue, tent)) in endpoints.iter().zip(snapshot(endpoints, prefix, key).await) {
        let mut values: Vec<(&str, String)> = Vec::new();
        values.extend(text(&lock).map(|v| ("lock", v)));
        for (what, set) in [("queue", &queue), ("tentative", &tent)] {
            if let redis::Value::Array(items) = set {
                values.extend(items.iter().filter_map(text).map(|v| (what, v)));
            }
        }
        out.extend(
            values
                .into_iter()
                .filter(|(_, v)| Some(v.as_str()) != allowed)
                .map(|(what, v)| format!("{what} {v} on {e}")),
        );
    }
    out
}

/// Polls until [`strays`] finds nothing, for at most `within`: how long that took, or what
/// was still there.
pub async fn wait_no_strays(
    endpoints: &[String],
    prefix: &str,
    key: &str,
    allowed: Option<&str>,
    within: Duration,
) -> Result<Duration, Vec<String>> {
    let t0 = Instant::now();
    loop {
        let left = strays(endpoints, prefix, key, allowed).await;
        if left.is_empty() {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > within {
            return Err(left);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The lock's value on `endpoint` (its holder's owner value), if any.
pub async fn holder(endpoint: &str, prefix: &str, key: &str) -> Option<String> {
    match raw(endpoint, redis::cmd("GET").arg(format!("{prefix}/{key}"))).await {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    }
}

/// An acquisition whose takes go unanswered (`pause` freezes the master, or enough Redlock
/// masters, and `resume` comes just after its deadline) must be resolved once they answer,
/// never left unknown. On a free lock the paused take runs when the server is back and grants
/// it: a recipe that `claims` such a grant (Redis, with `fence`, the master whose counter is
/// the token) must report it granted with that token; one that does not (Redlock) must have
/// given it back and report a withdrawal. `busy` has another client hold the lock through
/// the pause: the lost takes cannot have granted it, so the outcome must be a withdrawal.
/// Either way nothing of the waiter may be left on `endpoints` (but a holder's entries).
/// `early`: the outcome must come before the resume (Redlock with a minority paused: the
/// others confirm the give-back).
#[allow(clippy::too_many_arguments)]
pub async fn unknown_outcome_resolved<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    strategy: Strategy,
    endpoints: &[String],
    fence: Option<&str>,
    claims: bool,
    busy: bool,
    early: bool,
    pause: impl Future<Output = ()>,
    resume: impl Future<Output = ()>,
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let key = format!("unknown-{strategy}-{}", if busy { "busy" } else { "free" });
    let prefix = cfg.prefix.clone();
    let waiter = make(cfg.clone()).await;
    let holder_client = make(cfg.clone()).await;
    let held = if busy {
        let l = holder_client
            .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
            .await
            .expect("the holder acquires before the pause");
        Some(l)
    } else {
        None
    };
    let holder_owner = match held {
        Some(_) => holder(&endpoints[0], &prefix, &key).await,
        None => None,
    };
    // The take scripts loaded on every server first: a paused EVALSHA of a script the server
    // does not know yet fails with NOSCRIPT when it is back, and the client, which gave up
    // on it, never sends the EVAL that would have run it.
    let warm = format!("{key}-warm-up");
    let l = waiter
        .acquire(&warm, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("warm-up acquire");
    waiter.release(l).await.expect("warm-up release");
    pause.await;
    let paused_at = Instant::now();
    let wait = Duration::from_secs(1);
    let deadline = Instant::now() + wait;
    let acquire = async {
        let r = waiter.acquire(&key, strategy, deadline).await;
        (r, Instant::now())
    };
    let ((r, decided), back) = tokio::join!(acquire, async {
        // Resumed after the deadline: every take of the waiter went unanswered.
        tokio::time::sleep(wait + Duration::from_millis(500)).await;
        resume.await;
        Instant::now()
    });
    let outcome_after = decided - paused_at;
    println!(
        "{label}: acquisition with unanswered takes: {} after {outcome_after:?} (resumed after {:?})",
        match &r {
            Ok(l) => format!("granted, token {}", l.token),
            Err(e) => format!("{e}"),
        },
        back - paused_at
    );
    assert!(
        outcome_after < wait + cfg.resolve_timeout,
        "{label}: resolution not bounded by resolve_timeout"
    );
    assert!(
        !early || decided < back,
        "{label}: the outcome waited for the paused servers"
    );
    let grant_expected = claims && !busy;
    match r {
        Ok(lease) => {
            assert!(
                grant_expected,
                "{label}: granted, though {}",
                if busy {
                    "another client held the lock"
                } else {
                    "this recipe gives back what a lost take won"
                }
            );
            if let Some(m) = fence {
                let counter = raw(m, redis::cmd("GET").arg(format!("{prefix}/{key}:fence"))).await;
                assert_eq!(
                    counter,
                    redis::Value::BulkString(lease.token.to_string().into_bytes()),
                    "{label}: a resolved grant must carry the token its take drew"
                );
            }
            assert!(
                !lease.lost.is_lost(),
                "{label}: resolved grant already lost"
            );
            let mine = holder(&endpoints[0], &prefix, &key).await;
            assert!(mine.is_some(), "{label}: granted, yet no lock key");
            waiter
                .release(lease)
                .await
                .expect("release the resolved grant");
        }
        Err(LockError::Withdrawn { .. }) => assert!(
            !grant_expected,
            "{label}: withdrawn, though the paused take ran on resume and granted the lock"
        ),
        Err(e) => panic!("{label}: outcome left unresolved: {e}"),
    }
    // Whatever the outcome, nothing of the waiter stays (the holder's entries may).
    let gone = wait_no_strays(
        endpoints,
        &prefix,
        &key,
        holder_owner.as_deref(),
        Duration::from_secs(5),
    )
    .await;
    if let Some(l) = held {
        holder_client.release(l).await.expect("holder releases");
    }
    let took = gone.unwrap_or_else(|left| panic!("{label}: the waiter left {left:?}"));
    println!("{label}: nothing of the waiter left {took:?} after its outcome");
    waiter.crash().await;
    holder_client.crash().await;
}

/// A release that is lost (`cut` resets this client's connections to enough servers that it
/// cannot be confirmed, so the request never arrives: a pause would only delay it, and the
/// server would still run it when resumed) is retried until the servers confirm it: the key is
/// gone soon after `mend`, long before its TTL (30 s here) would have removed it.
pub async fn unanswered_release_retried<R, F, Fut>(
    make: &F,
    label: &str,
    cfg: RecipeConfig,
    endpoints: &[String],
    cut: impl Future<Output = ()>,
    mend: impl Future<Output = ()>,
) where
    R: Recipe,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
{
    let cfg = RecipeConfig {
        ttl: Duration::from_secs(30),
        ..cfg
    };
    let key = "unanswered-release";
    let client = make(cfg.clone()).await;
    let lease = client
        .acquire(key, Strategy::Herd, Instant::now() + Duration::from_secs(5))
        .await
        .expect("acquire");
    cut.await;
    let r = client.release(lease).await;
    // Long enough for the janitor's tries to meet the cut a few times. (The servers cannot be
    // inspected meanwhile: the cut keeps every client out.)
    tokio::time::sleep(Duration::from_secs(1)).await;
    mend.await;
    assert!(
        matches!(&r, Err(e) if e.is_retryable()),
        "{label}: a release the servers could not answer: {r:?}"
    );
    let gone = wait_no_strays(endpoints, &cfg.prefix, key, None, Duration::from_secs(5)).await;
    let took = gone.unwrap_or_else(|left| {
        panic!("{label}: 5 s after the cut was mended, the release was still not done: {left:?}")
    });
    println!("{label}: unanswered release confirmed {took:?} after the cut was mended");
    client.crash().await;
}
