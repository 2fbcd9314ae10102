//! The Redlock recipe against 5 real independent Redis masters.
//! One cluster for every scenario (distinct keys and prefixes), torn down even on failure; each
//! scenario reports its name (`LOCKBENCH_SCENARIO=<part of a name>` runs only matching ones).

mod common;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::FutureExt;
use lockbench::recipe::redlock::{RedlockOptions, RedlockRecipe};
use lockbench::recipe::{LockError, Recipe, RecipeConfig, Strategy, Tally};
use lockbench::{Cluster, System};

use common::Scenarios;
use common::contention::contend;
use common::redis_scenarios::{self as sc, config};

/// Requests per acquisition, 16 contenders × 30, counting one per master: measured with `cargo
/// test --test recipe_redlock -- --nocapture` (redlock/<strategy>: ... requests/acq): herd
/// 120-131 (split votes: give-backs and random retries), predecessor 29.95-30.44 (two ticket
/// rounds, SUBSCRIBE, a round after the wake-up, UNSUBSCRIBE: 5 each).
const BANDS: sc::RequestBands = sc::RequestBands {
    herd: (60.0, 260.0),
    predecessor: (25.0, 40.0),
};

async fn connect(endpoints: &[String], cfg: RecipeConfig) -> RedlockRecipe {
    RedlockRecipe::connect(
        endpoints,
        cfg,
        RedlockOptions::default(),
        Instant::now() + Duration::from_secs(10),
    )
    .await
    .expect("connect to the Redlock masters")
}

async fn scenarios(s: &mut Scenarios, cluster: &Cluster) {
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 5);
    let make = |cfg: RecipeConfig| connect(&endpoints, cfg);
    sc::all(s, &make, "redlock", &endpoints, BANDS).await;

    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    let majority = &names[..3];
    let probe = cluster.node(&names[0]).expect("node").endpoint();
    for ttl in [2, 10] {
        let cfg = config("/t/paused", Duration::from_secs(ttl), true);
        let label = format!("redlock/lost_before_expiry_when_majority_paused/ttl-{ttl}s");
        let scenario = sc::lost_before_expiry_when_paused(
            &make,
            &label,
            cfg,
            &probe,
            pause_all(cluster, majority),
            resume_all(cluster, majority),
        );
        sc::run(s, &label, scenario).await;
    }
    // Takes two masters cannot answer: three others confirm the give-back, so the waiter is
    // withdrawn while two are still paused. Three cannot: only two confirm until they resume.
    for st in [Strategy::Herd, Strategy::Predecessor] {
        for (busy, paused) in [(true, &names[3..]), (false, &names[2..])] {
            let label = format!(
                "redlock/{st}/unknown_outcome_resolved/{}-of-5-paused",
                paused.len()
            );
            let scenario = sc::unknown_outcome_resolved(
                &make,
                &label,
                config("/t/unknown", Duration::from_secs(10), true),
                st,
                &endpoints,
                None,
                false,
                busy,
                paused.len() < 3,
                pause_all(cluster, paused),
                resume_all(cluster, paused),
            );
            sc::run(s, &label, scenario).await;
        }
    }
    let label = "redlock/unanswered_release_retried";
    let scenario = sc::unanswered_release_retried(
        &make,
        label,
        config("/t/lost-release", Duration::from_secs(10), true),
        &endpoints,
        reject_all(cluster, majority, true),
        reject_all(cluster, majority, false),
    );
    sc::run(s, label, scenario).await;
    sc::run(
        s,
        "redlock/release_needs_a_majority",
        release_needs_a_majority(cluster),
    )
    .await;
    sc::run(
        s,
        "redlock/predecessor/gives_back_without_waking_itself",
        gives_back_without_waking_itself(cluster),
    )
    .await;
    sc::run(
        s,
        "redlock/predecessor/partial_grant_does_not_spin",
        partial_grant_does_not_spin(cluster),
    )
    .await;
    sc::run(
        s,
        "redlock/predecessor/two_masters_paused",
        two_masters_paused(cluster),
    )
    .await;
    sc::run(s, "redlock/one_master_paused", one_master_paused(cluster)).await;
    sc::run(
        s,
        "redlock/restart_empty_grants_twice_restart_delayed_does_not",
        restart_empty_grants_twice_restart_delayed_does_not(cluster),
    )
    .await;
    // Last: it kills masters for good.
    sc::run(s, "redlock/minority_down", minority_down(cluster)).await;
}

/// Freezes `names` at once (so they stop within milliseconds of each other).
async fn pause_all(cluster: &Cluster, names: &[String]) {
    for r in futures::future::join_all(names.iter().map(|n| cluster.pause(n))).await {
        r.expect("pause");
    }
}

async fn resume_all(cluster: &Cluster, names: &[String]) {
    for r in futures::future::join_all(names.iter().map(|n| cluster.resume(n))).await {
        r.expect("resume");
    }
}

/// Resets connections to `names` and refuses new ones (`on`), or stops it.
async fn reject_all(cluster: &Cluster, names: &[String], on: bool) {
    for n in names {
        common::reject_port(cluster, n, on).await;
    }
}

/// A release is a success only where a majority of masters still held the lock: one whose key
/// was deleted on 3 of 5 masters behind its back (as expiry would) is told Lost, and one whose
/// release a majority could not answer gets the connection error (it may still hold).
async fn release_needs_a_majority(cluster: &Cluster) {
    let endpoints = cluster.endpoints();
    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    let cfg = config("/t/release-majority", Duration::from_secs(10), true);
    let client = connect(&endpoints, cfg.clone()).await;
    let deadline = || Instant::now() + Duration::from_secs(5);
    let lease = client
        .acquire("deleted", Strategy::Herd, deadline())
        .await
        .expect("acquire");
    let key = format!("{}/deleted", cfg.prefix);
    for e in &endpoints[..3] {
        sc::raw(e, redis::cmd("DEL").arg(&key)).await;
    }
    let r = client.release(lease).await;
    assert!(
        matches!(r, Err(LockError::Lost { .. })),
        "release with the lock gone from 3 of 5 masters: {r:?}"
    );
    for e in &endpoints {
        let v = sc::raw(e, redis::cmd("EXISTS").arg(&key)).await;
        assert_eq!(v, redis::Value::Int(0), "{key} left on {e}");
    }

    let lease = client
        .acquire("unanswered", Strategy::Herd, deadline())
        .await
        .expect("acquire");
    pause_all(cluster, &names[..3]).await;
    let r = client.release(lease).await;
    resume_all(cluster, &names[..3]).await;
    assert!(
        matches!(r, Err(LockError::Connection(_))),
        "release that 3 of 5 masters did not answer: {r:?}"
    );
    client.crash().await;
}

/// A waiter first in line on 2 masters but queued behind another waiter ("ghost", written
/// directly) on 3 gives its 2 grants back and waits. Nobody else releases anything, so any
/// wake-up it counts is a message it sent to itself; and it must wait, not spin.
async fn gives_back_without_waking_itself(cluster: &Cluster) {
    let endpoints = cluster.endpoints();
    let cfg = config("/t/self-wake", Duration::from_secs(10), true);
    let k = format!("{}/ghost", cfg.prefix);
    for e in &endpoints[..3] {
        // Ticket 1, alive until 2100: ahead of anyone who takes a ticket from the counter.
        sc::raw(
            e,
            redis::cmd("ZADD").arg(format!("{k}:q")).arg(1).arg("ghost"),
        )
        .await;
        sc::raw(
            e,
            redis::cmd("ZADD")
                .arg(format!("{k}:qx"))
                .arg(4_102_444_800_000u64)
                .arg("ghost"),
        )
        .await;
        sc::raw(e, redis::cmd("SET").arg(format!("{k}:tickets")).arg(5)).await;
    }
    let client = connect(&endpoints, cfg.clone()).await;
    let tally = Tally::default();
    let wait = Duration::from_millis(1500);
    let r = client
        .acquire_counted(
            "ghost",
            Strategy::Predecessor,
            Instant::now() + wait,
            &tally,
        )
        .await;
    client.crash().await;
    for e in &endpoints {
        let mut del = redis::cmd("DEL");
        del.arg(format!("{k}:q"))
            .arg(format!("{k}:qx"))
            .arg(format!("{k}:tickets"));
        sc::raw(e, &del).await;
    }
    let (wakeups, requests) = (tally.wakeup_count(), tally.request_count());
    println!(
        "redlock/predecessor behind a ghost on 3 of 5 masters for {wait:?}: {wakeups:?} wake-ups, {requests} requests, {} fallback polls",
        tally.fallback_poll_count()
    );
    assert!(
        matches!(r, Err(LockError::Timeout { .. })),
        "expected a timeout behind the ghost, got {r:?}"
    );
    assert_eq!(wakeups, Some(0), "the waiter woke itself");
    // Two rounds to queue, a give-back and a subscription, then one round and one give-back
    // per fallback poll (500 ms): about 50. A waiter that wakes itself retries every few ms.
    assert!(requests <= 100, "{requests} requests in {wait:?}");
}

/// With 3 of 5 masters paused a waiter can win only 2: it holds them and waits for the
/// fallback poll. Granted answers must not count as "retry at once" (a spin of a round per
/// per-node timeout, 10 ms at this TTL).
async fn partial_grant_does_not_spin(cluster: &Cluster) {
    let endpoints = cluster.endpoints();
    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    let cfg = config("/t/partial", Duration::from_secs(2), true);
    let client = connect(&endpoints, cfg.clone()).await;
    let tally = Tally::default();
    let wait = Duration::from_secs(2);
    pause_all(cluster, &names[2..]).await;
    // The takes the paused masters did not answer leave the outcome open until they answer
    // the give-back: resumed just after the deadline.
    let (r, ()) = tokio::join!(
        client.acquire_counted(
            "partial",
            Strategy::Predecessor,
            Instant::now() + wait,
            &tally,
        ),
        async {
            tokio::time::sleep(wait + Duration::from_millis(200)).await;
            resume_all(cluster, &names[2..]).await;
        }
    );
    client.crash().await;
    let requests = tally.request_count();
    println!(
        "redlock/predecessor with 3 of 5 masters paused for {wait:?}: {requests} requests, {} fallback polls",
        tally.fallback_poll_count()
    );
    assert!(
        matches!(r, Err(LockError::Withdrawn { .. })),
        "expected a withdrawal once the paused masters answered, got {r:?}"
    );
    // Two rounds and a subscription, then a round per fallback poll (500 ms), a clean-up: ~40.
    assert!(requests <= 100, "{requests} requests in {wait:?}");
}

/// Two clients take turns with 2 of 5 masters paused: every round needs all 3 others. No
/// handoff takes more than one wake-up, and requests stay in a band.
async fn two_masters_paused(cluster: &Cluster) {
    let endpoints = cluster.endpoints();
    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    let label = "redlock/predecessor with 2 of 5 masters paused";
    let mut clients = Vec::new();
    for _ in 0..2 {
        clients.push(
            connect(
                &endpoints,
                config("/t/two-paused", Duration::from_secs(10), true),
            )
            .await,
        );
    }
    pause_all(cluster, &names[3..]).await;
    let out = contend(clients, "two-paused", Strategy::Predecessor, 15).await;
    resume_all(cluster, &names[3..]).await;
    println!("{}", out.summary(label));
    println!(
        "{label}: {} handoffs, wake-ups per handoff {:?}, handoff p99 {:?}, fallback polls {}",
        out.handoffs().len(),
        out.wakeups_per_handoff(),
        out.handoff_percentile(0.99),
        out.total_fallback_polls()
    );
    out.assert_exclusive(label, 30);
    // No lower bound here: each round waits the 50 ms per-node timeout on the paused masters,
    // longer than a hold, so a waiter's next round often finds the lock free unwoken.
    let per_handoff = out.wakeups_per_handoff().expect("handoffs");
    assert!(
        per_handoff <= 1.0,
        "{label}: {per_handoff:.2} wake-ups per handoff"
    );
    let requests = out.mean_requests();
    assert!(
        (10.0..=60.0).contains(&requests),
        "{label}: {requests:.1} requests per acquisition"
    );
}

/// One master paused mid-contention: safety holds and the other four keep granting, each round
/// losing only the per-node timeout on the paused one.
async fn one_master_paused(cluster: &Cluster) {
    let endpoints = cluster.endpoints();
    let make = |cfg: RecipeConfig| connect(&endpoints, cfg);
    let paused = cluster
        .servers()
        .last()
        .expect("a master")
        .name()
        .to_string();
    for s in [Strategy::Herd, Strategy::Predecessor] {
        let label = format!("redlock/{s} with {paused} paused");
        let mut clients = Vec::new();
        for _ in 0..16 {
            clients.push(make(config("/t/paused", Duration::from_secs(10), true)).await);
        }
        cluster.pause(&paused).await.expect("pause");
        let out = contend(clients, &format!("paused-{s}"), s, 5).await;
        cluster.resume(&paused).await.expect("resume");
        println!("{}", out.summary(&label));
        out.assert_exclusive(&label, 80);
    }
}

/// A minority of masters down: the quorum still grants, and the validity is below the TTL.
async fn minority_down(cluster: &Cluster) {
    let endpoints = cluster.endpoints();
    let make = |cfg: RecipeConfig| connect(&endpoints, cfg);
    let cfg = config("/t/minority", Duration::from_secs(5), false);
    let client = make(cfg.clone()).await;
    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    cluster.kill(&names[0]).await.expect("kill one master");
    cluster.kill(&names[1]).await.expect("kill another master");
    let t0 = Instant::now();
    let lease = client
        .acquire(
            "minority",
            Strategy::Herd,
            Instant::now() + Duration::from_secs(10),
        )
        .await
        .expect("3 of 5 masters grant");
    let took = t0.elapsed();
    println!(
        "redlock with 2 of 5 masters down: locked in {took:?}, validity {:?}",
        lease.ttl
    );
    sc::assert_validity("redlock with 2 of 5 masters down", &lease, cfg.ttl, took);
    client
        .release(lease)
        .await
        .expect("release with a minority down");
    client.crash().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn redlock_recipe_on_five_real_masters() {
    let cluster = common::start(System::Redlock, None).await;
    let mut s = Scenarios::new(Duration::from_secs(180));
    let result = AssertUnwindSafe(scenarios(&mut s, &cluster))
        .catch_unwind()
        .await;
    common::teardown_and_assert_gone(cluster).await;
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    s.finish();
}

/// True when the Redis server at `endpoint` answers a PING within a second.
async fn answers(endpoint: &str) -> bool {
    let Ok(client) = redis::Client::open(format!("redis://{endpoint}/")) else {
        return false;
    };
    let cfg = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)));
    match client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
    {
        Ok(mut con) => redis::cmd("PING")
            .query_async::<String>(&mut con)
            .await
            .is_ok(),
        Err(_) => false,
    }
}

/// Kleppmann's scenario, made certain: A holds the lock on exactly three masters (another
/// value held the other two while it acquired, then went); one of A's three is killed and
/// restarted at once without its data; B is then granted on that master and the two freed
/// ones while A's lease is still valid: the lock is granted twice. Restarted only after A's
/// TTL (what the Redlock spec prescribes), B cannot reach a majority before A's lease has
/// ended.
async fn restart_empty_grants_twice_restart_delayed_does_not(cluster: &Cluster) {
    use lockbench::cluster::DataOnRestart;
    let endpoints = cluster.endpoints();
    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    let ttl = Duration::from_secs(15);
    for (delayed, key) in [(false, "restart-empty"), (true, "restart-delayed")] {
        let cfg = config("/t/restart", ttl, false);
        let a = connect(&endpoints, cfg.clone()).await;
        let b = connect(&endpoints, cfg.clone()).await;
        // Someone else holds the key on the last two masters, so A wins exactly three. (Pausing
        // those two instead is racy: A's requests wait in their sockets and land on resume.)
        let lock_key = format!("{}/{key}", cfg.prefix);
        for e in &endpoints[3..] {
            let mut set = redis::cmd("SET");
            set.arg(&lock_key).arg("someone-else").arg("PX").arg(60_000);
            sc::raw(e, &set).await;
        }
        let held = a
            .acquire(key, Strategy::Herd, Instant::now() + Duration::from_secs(5))
            .await
            .expect("A acquires on the three free masters");
        let valid_until = held.acquired_at + ttl - sc::drift(ttl);
        // The other holder's keys go (as expiry would), and one of A's three masters dies.
        for e in &endpoints[3..] {
            sc::raw(e, redis::cmd("DEL").arg(&lock_key)).await;
        }
        cluster.kill(&names[0]).await.expect("kill");
        if delayed {
            // Down while A's lease runs: B finds only two free masters.
            let early = b.acquire(key, Strategy::Herd, valid_until).await;
            assert!(
                early.is_err(),
                "{key}: B was granted while A's lease was valid and a master was down"
            );
            tokio::time::sleep_until(valid_until.into()).await;
        }
        cluster
            .restart(&names[0], DataOnRestart::Wipe)
            .await
            .expect("restart");
        // The restarted master answers before B asks (a loaded machine restarts slowly).
        let restarted = cluster.node(&names[0]).expect("node").endpoint();
        let up = Instant::now();
        while !answers(&restarted).await {
            assert!(
                up.elapsed() < Duration::from_secs(10),
                "{key}: the restarted master never answered"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let granted = b
            .acquire(key, Strategy::Herd, Instant::now() + Duration::from_secs(8))
            .await;
        let granted_at = Instant::now();
        if delayed {
            let lease = granted.expect("B acquires once A's lease is over");
            assert!(
                lease.acquired_at >= valid_until,
                "{key}: granted before A's lease ended"
            );
            let _ = b.release(lease).await;
        } else {
            let lease = granted.expect("B acquires on the emptied master and the two resumed");
            assert!(
                granted_at < valid_until && !held.lost.is_lost(),
                "{key}: B's grant came after A's lease ({:?} late)",
                granted_at.checked_duration_since(valid_until)
            );
            println!(
                "{key}: B granted while A held, {:?} before A's lease ended",
                valid_until - granted_at
            );
            let _ = b.release(lease).await;
        }
        let _ = a.release(held).await;
        a.crash().await;
        b.crash().await;
    }
}
