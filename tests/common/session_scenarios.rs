//! Scenarios both session-based recipes (ZooKeeper and etcd) must pass, written once against the
//! `Recipe` trait. Each test file passes a connect closure (`make(ttl)`) and, where a scenario
//! looks at the servers, a closure that does it the system's own way.

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

use lockbench::Cluster;
use lockbench::cluster::DataOnRestart;
use lockbench::recipe::{Lease, LockError, Recipe, RecipeConfig, Strategy, Tally};

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

/// What a contention run of one system × strategy must show beyond exclusion.
pub struct Expect {
    /// Bounds on the mean requests per acquisition (measured, with margin), the upper one with
    /// the fallback polls' requests left out: a spin loop or a retry storm leaves the band.
    pub requests: (f64, f64),
    /// The most requests a fallback poll costs (the queue read again, and the watch set again
    /// where that read does not set it; one fewer when the read finds the lock free): a loaded
    /// machine lengthens the waits, and with them the polls, which the fallback-poll bound
    /// judges on their own.
    pub requests_per_poll: u64,
    /// Fallback polls allowed beyond one per fallback interval each waiter spent waiting.
    pub max_fallback_polls: u64,
}

/// 16 clients × 30 acquisitions under `strategy`: exclusion, FIFO (all but herd), fencing,
/// requests within `expect.requests`, and the wake-up path at work: the herd wakes many per
/// acquisition; a predecessor handoff is woken once (not polled: between 0.8 and 1 wake-up per
/// handed-off acquisition, beyond one only by the queue's corrections) and takes less than the
/// fallback poll even at p99.
pub async fn contention<R, F, Fut>(
    make: &F,
    system: &str,
    ttl: Duration,
    strategy: Strategy,
    expect: &Expect,
) where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
{
    let clients = futures::future::join_all((0..16).map(|_| make(ttl))).await;
    let key = format!("mutex-{strategy}");
    let out = contend(clients, &key, strategy, 30).await;
    let label = format!("{system} {strategy} x16");
    let visible = out.holds.iter().all(|h| h.wakeups.is_some());
    let per_handoff = visible.then(|| out.wakeups_per_handoff()).flatten();
    let p99 = out.handoff_percentile(0.99);
    eprintln!(
        "{}; handoffs {}, wakeups/handoff {}, handoff p99 {p99:?}, fallback polls {}",
        out.summary(&label),
        out.handoffs().len(),
        per_handoff.map_or("n/a".to_string(), |w| format!("{w:.2}")),
        out.total_fallback_polls()
    );
    out.assert_exclusive(&label, 480);
    assert_eq!(out.holds.len(), 480);
    if strategy != Strategy::Herd {
        assert_eq!(
            out.fifo_violations(),
            0,
            "{label}: grant order must equal queue order"
        );
    }
    // A waiter deep in the queue on a loaded machine waits several poll intervals and reads
    // the queue again after each (CI once measured 7.10 requests per acquisition here, 3.14 of
    // them after 754 polls, which the bound below allowed).
    let requests = out.mean_requests();
    let polls = out.total_fallback_polls();
    let by_polls = (polls * expect.requests_per_poll) as f64 / out.holds.len().max(1) as f64;
    assert!(
        requests >= expect.requests.0 && requests - by_polls <= expect.requests.1,
        "{label}: {requests:.2} requests per acquisition, at most {by_polls:.2} of them after \
         {polls} fallback polls: outside {:?}",
        expect.requests
    );
    // A waiter polls once per fallback interval it spends waiting: deep in a 16-client queue on
    // a loaded machine a wait can legitimately last several intervals. More polls than the waits
    // allow is a poll loop; a broken wake-up path shows in the wake-ups per handoff and the
    // handoff p99 below.
    let poll = RecipeConfig::default().fallback_poll;
    let allowed: u64 = out
        .holds
        .iter()
        .map(|h| (h.acquire_latency.as_micros() / poll.as_micros()) as u64)
        .sum::<u64>()
        + expect.max_fallback_polls;
    assert!(
        out.total_fallback_polls() <= allowed,
        "{label}: {} fallback polls, more than the waits allow ({allowed})",
        out.total_fallback_polls(),
    );
    // Most acquisitions must be handoffs, or the wake-up figures below would say little.
    assert!(
        out.handoffs().len() >= 240,
        "{label}: only {} of 480 acquisitions were handoffs",
        out.handoffs().len()
    );
    let fallback = RecipeConfig::default().fallback_poll;
    match strategy {
        Strategy::Herd => {
            let w = out.mean_wakeups();
            assert!(w >= 4.0, "{label}: the herd should wake many: {w:.2}/acq");
        }
        Strategy::Predecessor => {
            let w = per_handoff.expect("handoffs were counted");
            let odd: Vec<(Option<u64>, u64, u64)> = out
                .handoffs()
                .iter()
                .filter(|(h, _)| h.wakeups != Some(1))
                .map(|(h, _)| (h.wakeups, h.queue_wakeups, h.requests))
                .collect();
            let (excess, corrections) = out.excess_wakeups();
            assert!(
                w >= 0.8,
                "{label}: {w:.4} wake-ups per handoff: the waiters are polling instead of being \
                 woken"
            );
            // One release wakes one waiter. A waiter woken by the one ahead leaving without the
            // lock (it gave up, its session or lease ended) and still behind another after it
            // counts that wake-up as the queue's correction (`Tally::queue_wakeups`).
            assert!(
                excess <= corrections as i64,
                "{label}: {w:.4} wake-ups per handoff, {excess} beyond one each with \
                 {corrections} queue corrections; handoffs woken other than once (wake-ups, of \
                 them corrections, requests): {odd:?}"
            );
            // A release counted as a correction would pass the bound above unseen: without
            // faults, waiters leave the queue early only rarely.
            assert!(
                corrections * 10 <= out.handoffs().len() as u64,
                "{label}: {corrections} queue corrections in {} handoffs",
                out.handoffs().len()
            );
            assert!(
                p99 < fallback,
                "{label}: handoff p99 {p99:?} is not below the fallback poll {fallback:?}"
            );
        }
        Strategy::Native => {
            assert!(
                p99 < fallback,
                "{label}: handoff p99 {p99:?} is not below the fallback poll {fallback:?}"
            );
        }
        // Calibrations, never a mutex's handoff figure: the callers pass mutex strategies.
        Strategy::UnsafeDel
        | Strategy::UnsafeSetnxExpire
        | Strategy::UnsafeWriterSkipsReaders
        | Strategy::UnsafeGetSet
        | Strategy::UnsafeSharedSession => {
            panic!("{label}: {strategy} is a calibration, not measured here")
        }
    }
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
    let ended = Instant::now();
    (expiry.expire)(&a).await;
    tokio::time::timeout(expiry.told_within, stale.lost.wait())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "a's lease must be signalled lost within {:?} of its session or lease ending",
                expiry.told_within
            )
        });
    eprintln!(
        "isolation {strategy}: a told its lease is lost {:?} after the end was asked for",
        ended.elapsed()
    );
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
        // Each leaves c certainly not holding: its deadline passed with nothing granted, its
        // attempt was withdrawn after an answer was lost (a loaded server can drop a 2 s
        // session's connection mid-create), or no server could take it.
        Err(
            LockError::Timeout { .. } | LockError::Withdrawn { .. } | LockError::Unavailable(_),
        ) => {}
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

/// An acquire that times out leaves nothing behind, as soon as it returns. `entries(key)` lists
/// what the server holds for the lock.
pub async fn deadline<R, F, Fut, L, T>(make: &F, strategy: Strategy, ttl: Duration, entries: L)
where
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
    assert_eq!(entries(&key).await, before, "b left an entry behind");
    a.release(held).await.expect("a releases");
    assert!(entries(&key).await.is_empty(), "a left an entry behind");
    for r in [a, b] {
        r.crash().await;
    }
}

/// A holder that cannot reach the cluster is told its lock may be gone within its
/// TTL/session timeout, and the client works again once the cluster is back. Where the recipe
/// knows when its last acknowledged renewal was sent (`renewed_at`), the signal must come
/// before that + TTL, when the server may expire the lease.
pub async fn lost_when_silent<R, F, Fut, H>(
    make: &F,
    system: &str,
    cluster: &Cluster,
    renewed_at: H,
) where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
    H: AsyncFn(&R) -> Option<Instant>,
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
    let told_at = Instant::now();
    let after = told_at - frozen;
    let renewed = renewed_at(&a).await;
    for n in &names {
        cluster.resume(n).await.expect("resume");
    }
    assert!(
        told.is_ok(),
        "the holder must be told within its TTL ({ttl:?}) that the lock may be gone"
    );
    eprintln!("{system} silent cluster: holder told after {after:?} (ttl {ttl:?})");
    if let Some(renewed) = renewed {
        // The holder counts its lease lost from an instant of the clock (what `is_lost` reads
        // before every access), not from when a loaded machine got round to waking this task.
        let lost_from = held
            .lost
            .valid_until()
            .expect("a lease renewed by acknowledged renewals is lost by the clock");
        let margin = (renewed + ttl).saturating_duration_since(lost_from);
        eprintln!(
            "{system} silent cluster: lost from {margin:?} before last renewal sent + TTL, \
             observed {:?} after it",
            told_at.saturating_duration_since(renewed)
        );
        assert!(held.lost.is_lost());
        assert!(
            lost_from < renewed + ttl,
            "lost from {:?} after the last acknowledged renewal was sent, not before the TTL \
             {ttl:?} the server counts from its arrival",
            lost_from - renewed
        );
    }
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

/// A predecessor waiter woken by the one ahead of it leaving the queue without the lock (it
/// gave up at its deadline), and still behind the holder after it, counts that wake-up as the
/// queue's correction; the holder's release wakes it once more and it takes the lock: two
/// wake-ups, one a correction. What lets `contention`'s bound tell a release that woke two
/// waiters from a queue that corrected itself. `make(config)` connects a client; `entries(key)`
/// lists what the server holds for the lock.
pub async fn waiter_ahead_gives_up<R, F, Fut, L, T>(make: &F, entries: L)
where
    R: Recipe + 'static,
    F: Fn(RecipeConfig) -> Fut,
    Fut: Future<Output = R>,
    L: AsyncFn(&str) -> Vec<T>,
{
    let key = "ahead-gives-up";
    // No fallback poll within the scenario: a poll that read the queue just before b or a left
    // would serve the change instead of the wake-up this scenario counts.
    let cfg = RecipeConfig {
        fallback_poll: Duration::from_secs(60),
        ..config(Duration::from_secs(10))
    };
    let (a, b, c) = (
        make(cfg.clone()).await,
        make(cfg.clone()).await,
        make(cfg).await,
    );
    let held = acquire_predecessor(&a, key, Duration::from_secs(5))
        .await
        .expect("a acquires");
    let (b, c) = (std::sync::Arc::new(b), std::sync::Arc::new(c));
    let gives_up = {
        let b = b.clone();
        tokio::spawn(async move { acquire_predecessor(&*b, key, Duration::from_secs(3)).await })
    };
    // b takes its place behind a before c queues behind b (on a loaded machine b's first
    // request can come late).
    until_entries(&entries, key, 2).await;
    let waits = {
        let c = c.clone();
        tokio::spawn(async move {
            let tally = Tally::default();
            let deadline = Instant::now() + Duration::from_secs(15);
            let got = c
                .acquire_counted(key, Strategy::Predecessor, deadline, &tally)
                .await;
            (got, tally.wakeup_count(), tally.queue_wakeup_count())
        })
    };
    until_entries(&entries, key, 3).await;
    let b_got = gives_up.await.expect("b's task");
    assert!(
        matches!(b_got, Err(LockError::Timeout { .. })),
        "b must give up at its deadline: {b_got:?}"
    );
    // c hears b leave, finds a still ahead and waits on a.
    until_entries(&entries, key, 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waits.is_finished(), "c must still wait behind a");
    a.release(held).await.expect("a releases");
    let (got, wakeups, corrections) = waits.await.expect("c's task");
    let lease = got.expect("c acquires once a releases");
    assert_eq!(
        (wakeups, corrections),
        (Some(2), 1),
        "c's wake-ups and, of them, the queue's corrections: b leaving, then a's release"
    );
    c.release(lease).await.expect("c releases");
    a.crash().await;
    for r in [b, c] {
        if let Ok(r) = std::sync::Arc::try_unwrap(r) {
            r.crash().await;
        }
    }
}

/// Waits (at most 10 s) until the server holds `n` entries for lock `key`.
async fn until_entries<L, T>(entries: &L, key: &str, n: usize)
where
    L: AsyncFn(&str) -> Vec<T>,
{
    lockbench::fault::wait_until(Duration::from_secs(10), || async {
        match entries(key).await.len() {
            held if held == n => Ok(()),
            held => Err(format!("{key}: the server holds {held} entries, not {n}")),
        }
    })
    .await
    .unwrap_or_else(|why| panic!("{why}, after 10 s"));
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

/// A waiter whose session or lease ends while it waits in the queue gets `Lost` or `Timeout`,
/// leaves nothing on the server, and its next acquire works on a fresh session or lease.
/// `expire` ends the waiter's session or lease; `entries(key)` lists what the server holds.
pub async fn waiter_expiry<R, F, Fut, E, L, T>(make: &F, strategy: Strategy, expire: E, entries: L)
where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
    E: AsyncFn(&R),
    L: AsyncFn(&str) -> Vec<T>,
    T: PartialEq + Debug,
{
    let key = format!("waiter-expiry-{strategy}");
    let ttl = Duration::from_secs(2);
    let (a, b) = (make(ttl).await, make(ttl).await);
    let held = a
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let only_a = entries(&key).await;
    let b = std::sync::Arc::new(b);
    let waiter = {
        let (b, key) = (b.clone(), key.clone());
        tokio::spawn(async move {
            b.acquire(&key, strategy, Instant::now() + Duration::from_secs(4))
                .await
        })
    };
    // Let b take its place in the queue before its session or lease ends.
    tokio::time::sleep(Duration::from_millis(500)).await;
    if strategy != Strategy::Herd {
        // A herd waiter writes nothing while it waits; a queued one has its place.
        assert_ne!(
            entries(&key).await,
            only_a,
            "b must be waiting in the queue"
        );
    }
    expire(&b).await;
    let got = waiter.await.expect("waiter task");
    assert!(
        matches!(got, Err(LockError::Lost { .. } | LockError::Timeout { .. })),
        "a waiter whose session or lease ended must get Lost or Timeout: {got:?}"
    );
    assert_eq!(
        entries(&key).await,
        only_a,
        "b left an entry behind after its session or lease ended"
    );
    a.release(held).await.expect("a releases");
    let l = b
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("b acquires again on a fresh session or lease");
    b.release(l).await.expect("b releases");
    assert!(
        entries(&key).await.is_empty(),
        "entries left after b released"
    );
    a.crash().await;
    if let Ok(b) = std::sync::Arc::try_unwrap(b) {
        b.crash().await;
    }
}

/// Waiters keep waiting through a leader change: the leader is killed while they wait, a new
/// one is elected, the old one comes back, and only then does the holder release: every waiter
/// still gets the lock, one at a time, with growing tokens. (The old leader is back before the
/// handoffs because the etcd client keeps sending a share of its requests to a dead member;
/// that is a client limit, not what this scenario is about.)
pub async fn leader_change<R, F, Fut>(make: &F, system: &str, strategy: Strategy, cluster: &Cluster)
where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
{
    let key = format!("leader-change-{strategy}");
    // Sessions long enough that an election (a second or two) does not end them.
    let ttl = Duration::from_secs(6);
    let a = make(ttl).await;
    let held = a
        .acquire(&key, strategy, Instant::now() + Duration::from_secs(5))
        .await
        .expect("a acquires");
    let mut waiters = Vec::new();
    for i in 0..3 {
        let r = make(ttl).await;
        waiters.push(tokio::spawn(wait_through(r, key.clone(), strategy, i)));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (leader, new_leader, took) = change_leader(cluster, &key).await;
    eprintln!(
        "{system} {strategy} leader change: {leader} killed, {new_leader} elected in {took:?}"
    );
    // The grant to the next waiter can arrive before the release's own answer does: compare
    // with the moment the release was sent.
    let releasing = Instant::now();
    let a = match a.release(held).await {
        Ok(()) => Some(a),
        Err(e) => {
            // The release may not have happened: crash, so that the session or lease ends
            // the lock instead of the keep-alive keeping it forever.
            eprintln!("{system} {strategy} leader change: a's release: {e}; a crashes");
            a.crash().await;
            None
        }
    };
    let mut holds = Vec::new();
    let mut failures = Vec::new();
    for w in waiters {
        match w.await.expect("waiter task") {
            Ok(h) => holds.push(h),
            Err(e) => failures.push(e),
        }
    }
    if let Some(a) = a {
        a.crash().await;
    }
    eprintln!(
        "{system} {strategy} leader change: grants {:?} after the release was sent, errors on the way {:?}",
        holds
            .iter()
            .map(|h| h.acquired - releasing)
            .collect::<Vec<_>>(),
        holds.iter().map(|h| h.errors.len()).collect::<Vec<_>>()
    );
    assert!(failures.is_empty(), "waiters failed: {failures:?}");
    assert_one_at_a_time(holds, releasing);
}

/// What a waiter of [`leader_change`] saw of its turn.
struct Turn {
    waiter: u32,
    token: u64,
    acquired: Instant,
    released: Instant,
    /// Whether it was told its lock was lost while it held it.
    lost: bool,
    release_error: Option<LockError>,
    /// The errors it tried again after.
    errors: Vec<String>,
}

/// Waiter `i` acquires `key` (trying again after an error a client would retry), holds it
/// 50 ms, releases and crashes; `Err` says why it gave up.
async fn wait_through<R: Recipe>(
    r: R,
    key: String,
    strategy: Strategy,
    i: u32,
) -> Result<Turn, String> {
    let until = Instant::now() + Duration::from_secs(60);
    let mut errors = Vec::new();
    // A request that meets the election may fail with an unknown outcome (the recipe then
    // cleans up, or withdraws and says so), and a lease whose keep-alives went to the dead
    // leader for a whole TTL ends (the recipe then grants a fresh one): a client tries again,
    // as any would.
    loop {
        match r.acquire(&key, strategy, until).await {
            Ok(l) => {
                let acquired = Instant::now();
                tokio::time::sleep(Duration::from_millis(50)).await;
                let released = Instant::now();
                let token = l.token;
                let lost = l.lost.is_lost();
                let rel = r.release(l).await;
                r.crash().await;
                return Ok(Turn {
                    waiter: i,
                    token,
                    acquired,
                    released,
                    lost,
                    release_error: rel.err(),
                    errors,
                });
            }
            Err(e)
                if Instant::now() < until
                    && (e.is_indeterminate()
                        || matches!(e, LockError::Lost { .. } | LockError::Withdrawn { .. })) =>
            {
                errors.push(e.to_string());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                let n = errors.len();
                errors.truncate(3);
                return Err(format!(
                    "waiter {i}: {e} (after {n} errors: {errors:?} ...)"
                ));
            }
        }
    }
}

/// Kills the leader, waits for a new one, brings the old one back and waits until the cluster
/// is ready; returns the old leader, the new one and how long the election took. A target's
/// key listing started right after the kill rides out the election and finds `key`'s entries.
async fn change_leader(cluster: &Cluster, key: &str) -> (String, String, Duration) {
    let leader = cluster
        .leader()
        .await
        .expect("leader")
        .expect("one leader before the kill");
    cluster.kill(&leader).await.expect("kill the leader");
    let killed_at = Instant::now();
    let ops = lockbench::service::of(cluster.system())
        .target_ops()
        .expect("the system lists a target's keys");
    let listed = (ops.list)(&cluster.connect_info(), None, PREFIX, 10_000).await;
    eprintln!(
        "leader change: a key listing started at the kill answered after {:?} with {}",
        killed_at.elapsed(),
        match &listed {
            Ok(keys) => format!("{} keys", keys.len()),
            Err(e) => e.clone(),
        }
    );
    let listed = listed.expect("the key listing rides out the election");
    assert!(
        listed.iter().any(|k| k.contains(key)),
        "the listing must find {key}'s entries under {PREFIX}: {listed:?}"
    );
    let (new_leader, took) = cluster
        .wait_new_leader(&leader, Duration::from_secs(30))
        .await
        .expect("a new leader");
    cluster
        .restart(&leader, DataOnRestart::Keep)
        .await
        .expect("restart the old leader");
    cluster
        .wait_ready(Duration::from_secs(60))
        .await
        .expect("cluster ready again");
    (leader, new_leader, took)
}

/// Every waiter had its turn after the holder's release was sent, one at a time, with growing
/// tokens, and none was told it lost the lock while holding it.
fn assert_one_at_a_time(mut holds: Vec<Turn>, releasing: Instant) {
    assert_eq!(holds.len(), 3);
    holds.sort_by_key(|h| h.acquired);
    for w in holds.windows(2) {
        assert!(
            w[1].acquired >= w[0].released,
            "double grant: waiter {} got the lock while waiter {} held it",
            w[1].waiter,
            w[0].waiter
        );
        assert!(
            w[1].token > w[0].token,
            "tokens must grow: {} then {}",
            w[0].token,
            w[1].token
        );
    }
    for h in &holds {
        assert!(
            !h.lost,
            "waiter {} was told its lock was lost while holding",
            h.waiter
        );
        // A release of unknown outcome is honest (the etcd client may still send to the
        // member that was just restarted); the waiter crashed after it, so its session or
        // lease ended the lock, and the order checks above still hold.
        assert!(
            h.release_error
                .as_ref()
                .is_none_or(|e| e.is_indeterminate()),
            "waiter {} release: {:?}",
            h.waiter,
            h.release_error
        );
        assert!(
            h.acquired >= releasing,
            "waiter {} got the lock before a released it",
            h.waiter
        );
    }
}

/// What the system-specific side of [`hold_and_acquire`] does on the servers.
pub struct Leftover<P, H, L> {
    /// Leaves a lock node or key of this client's session or lease on `key`, as an
    /// unanswered create of an earlier attempt would; returns its fencing token (czxid, create
    /// revision).
    pub plant: P,
    /// Whether the lock on `key` granted with `token` is still on the server.
    pub held: H,
    /// What the server holds for lock `key`.
    pub entries: L,
}

/// One client holds key X and acquires key Y, where a leftover of its own waits: it must not
/// wait for itself, nor remove its live lock on X (X's node or key stays, no lost signal), and
/// the new grant gets a fresh token, never the leftover's.
pub async fn hold_and_acquire<R, F, Fut, P, H, L, T>(
    make: &F,
    strategy: Strategy,
    side: &Leftover<P, H, L>,
) where
    R: Recipe,
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = R>,
    P: AsyncFn(&R, &str) -> u64,
    H: AsyncFn(&str, u64) -> bool,
    L: AsyncFn(&str) -> Vec<T>,
    T: PartialEq + Debug,
{
    let (x, y) = (format!("hold-x-{strategy}"), format!("hold-y-{strategy}"));
    let a = make(Duration::from_secs(6)).await;
    let soon = || Instant::now() + Duration::from_secs(5);
    let on_x = a.acquire(&x, strategy, soon()).await.expect("a acquires X");
    let stale = (side.plant)(&a, &y).await;
    let t0 = Instant::now();
    let on_y = a
        .acquire(&y, strategy, soon())
        .await
        .expect("a acquires Y despite its own leftover there (it must not wait for itself)");
    eprintln!(
        "{strategy} hold X, acquire Y over a leftover: {:?}",
        t0.elapsed()
    );
    assert!(
        on_y.token > stale,
        "Y's token {} must be fresh, not the leftover's {stale}",
        on_y.token
    );
    assert!(on_y.token != on_x.token);
    assert!(!on_x.lost.is_lost(), "X must not be signalled lost");
    assert!(
        (side.held)(&x, on_x.token).await,
        "a's lock on X must still be on the server"
    );
    a.release(on_y).await.expect("a releases Y");
    a.release(on_x).await.expect("a releases X, still its own");
    assert!((side.entries)(&x).await.is_empty(), "X left entries");
    assert!((side.entries)(&y).await.is_empty(), "Y left entries");
    a.crash().await;
}
