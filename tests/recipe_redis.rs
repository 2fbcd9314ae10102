//! The Redis (Sentinel) lock recipe against a real master + 2 replicas + 3 Sentinels.
//! One cluster for every scenario (distinct keys and prefixes), torn down even on failure; each
//! scenario reports its name (`LOCKBENCH_SCENARIO=<part of a name>` runs only matching ones).

mod common;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::FutureExt;
use lockbench::cluster::NodeRole;
use lockbench::recipe::redis::{RedisRecipe, RedisTarget};
use lockbench::recipe::{Recipe, RecipeConfig, Strategy};
use lockbench::{Cluster, System};

use common::Scenarios;
use common::redis_scenarios::{self as sc, config};

fn target(cluster: &Cluster) -> RedisTarget {
    let address_map: HashMap<String, String> = cluster
        .nodes()
        .iter()
        .filter(|n| n.role() == NodeRole::Server)
        .map(|n| (n.hostname().to_string(), n.endpoint()))
        .collect();
    RedisTarget::Sentinel {
        sentinels: cluster.sentinel_endpoints(),
        master_name: "mymaster".into(),
        address_map,
    }
}

/// Requests per acquisition, 16 contenders × 30, measured with `cargo test --test recipe_redis
/// -- --nocapture` (redis/<strategy>: ... requests/acq): herd 15.3-16.0 (every waiter retries on
/// every release, about 13 wake-ups each), predecessor 4.99 (take, SUBSCRIBE, take again, the
/// take after the wake-up, UNSUBSCRIBE).
const BANDS: sc::RequestBands = sc::RequestBands {
    herd: (8.0, 40.0),
    predecessor: (4.5, 7.0),
};

async fn connect(t: &RedisTarget, cfg: RecipeConfig) -> RedisRecipe {
    RedisRecipe::connect(t.clone(), cfg, Instant::now() + Duration::from_secs(10))
        .await
        .expect("connect through Sentinel")
}

async fn scenarios(s: &mut Scenarios, cluster: &Cluster) {
    let t = target(cluster);
    let make = |cfg: RecipeConfig| connect(&t, cfg);
    let leader = cluster.leader().await.expect("leader").expect("a master");
    let master_ep = vec![cluster.node(&leader).expect("master node").endpoint()];

    sc::all(s, &make, "redis", &master_ep, BANDS).await;
    // The known-broken designs (unsafe, for calibration), beside the correct herd.
    common::broken_scenarios::all(s, &make, &master_ep[0]).await;

    for st in [Strategy::Herd, Strategy::Predecessor] {
        for busy in [false, true] {
            let label = format!(
                "redis/{st}/unknown_outcome_resolved/{}",
                if busy { "busy" } else { "free" }
            );
            let scenario = sc::unknown_outcome_resolved(
                &make,
                &label,
                config("/t/unknown", Duration::from_secs(10), true),
                st,
                &master_ep,
                Some(&master_ep[0]),
                true,
                busy,
                false,
                pause_master(cluster, &leader),
                resume_master(cluster, &leader),
            );
            sc::run(s, &label, scenario).await;
        }
    }
    let label = "redis/unanswered_release_retried";
    let scenario = sc::unanswered_release_retried(
        &make,
        label,
        config("/t/lost-release", Duration::from_secs(10), true),
        &master_ep,
        cut_master(cluster, &leader),
        mend_master(cluster, &leader),
    );
    sc::run(s, label, scenario).await;

    for ttl in [2, 10] {
        let cfg = config("/t/paused", Duration::from_secs(ttl), true);
        let label = format!("redis/lost_before_expiry_when_master_paused/ttl-{ttl}s");
        let scenario = sc::lost_before_expiry_when_paused(
            &make,
            &label,
            cfg,
            &master_ep[0],
            pause_master(cluster, &leader),
            resume_master(cluster, &leader),
        );
        sc::run(s, &label, scenario).await;
    }

    // Last: it moves the master.
    sc::run(s, "redis/sentinel_failover", failover(cluster, &t)).await;
}

/// Sets how long the Sentinels wait before they call the master down.
async fn set_down_after(cluster: &Cluster, ms: u64) {
    for ep in cluster.sentinel_endpoints() {
        let mut cmd = redis::cmd("SENTINEL");
        cmd.arg("SET")
            .arg("mymaster")
            .arg("down-after-milliseconds")
            .arg(ms);
        sc::raw(&ep, &cmd).await;
    }
}

/// Freezes the master with Sentinel told to wait a minute first: a failover would move the
/// lock to a replica that has it, where the watchdog's renewal would rightly succeed.
async fn pause_master(cluster: &Cluster, master: &str) {
    set_down_after(cluster, 60_000).await;
    cluster.pause(master).await.expect("pause the master");
}

async fn resume_master(cluster: &Cluster, master: &str) {
    cluster.resume(master).await.expect("resume the master");
    set_down_after(cluster, 1_000).await;
}

/// Resets every connection to the master's port and refuses new ones (Sentinel told to wait a
/// minute first, as for a pause): a request sent now is lost, not delayed.
async fn cut_master(cluster: &Cluster, master: &str) {
    set_down_after(cluster, 60_000).await;
    common::reject_port(cluster, master, true).await;
}

async fn mend_master(cluster: &Cluster, master: &str) {
    common::reject_port(cluster, master, false).await;
    set_down_after(cluster, 1_000).await;
}

/// Kills the master: a client that follows Sentinel can lock again.
async fn failover(cluster: &Cluster, t: &RedisTarget) {
    let make = |cfg: RecipeConfig| connect(t, cfg);
    let leader = cluster.leader().await.expect("leader").expect("a master");
    let cfg = config("/t/failover", Duration::from_secs(5), true);
    let old_client = make(cfg.clone()).await;
    // A lock held at the kill survives only if replication carried it before the crash.
    let held = old_client
        .acquire(
            "held-at-kill",
            Strategy::Herd,
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .expect("lock before the kill");
    let killed_at = Instant::now();
    cluster.kill(&leader).await.expect("kill master");
    let (new_leader, elected) = cluster
        .wait_new_leader(&leader, Duration::from_secs(60))
        .await
        .expect("failover");
    let new_ep = cluster.node(&new_leader).expect("node").endpoint();
    let key = "/t/failover/held-at-kill";
    let survived = sc::raw(&new_ep, redis::cmd("EXISTS").arg(key)).await;
    println!("redis failover: lock held at the kill present on the new master: {survived:?}");
    // Replication is asynchronous: a lock granted just before the kill may never reach the
    // promoted replica. When it did, delete it there as if it had not, so the case is always
    // tested: the key is gone from `gone_at` on (from the kill, if it never arrived), the
    // holder's last renewal was sent before that, so its lost signal must come by
    // gone_at + TTL − drift.
    let gone_at = if survived == redis::Value::Int(1) {
        let t = Instant::now();
        sc::raw(&new_ep, redis::cmd("DEL").arg(key)).await;
        t
    } else {
        killed_at
    };
    let mut signal = held.lost.clone();
    let lost_at = tokio::spawn(async move {
        signal.wait().await;
        Instant::now()
    });
    let fresh = make(cfg.clone()).await;
    let lease = fresh
        .acquire(
            "after-failover",
            Strategy::Herd,
            Instant::now() + Duration::from_secs(20),
        )
        .await
        .expect("acquire after failover");
    println!(
        "redis failover: {leader} killed, Sentinel named {new_leader} after {elected:?}; a new client locked {:?} after the kill (token {})",
        killed_at.elapsed(),
        lease.token
    );
    assert_eq!(
        fresh.master_endpoint().await,
        cluster.node(&new_leader).expect("node").endpoint()
    );
    fresh.release(lease).await.expect("release after failover");
    // The client connected before the kill re-resolves on its connection error.
    let t0 = Instant::now();
    let lease = old_client
        .acquire(
            "after-failover",
            Strategy::Predecessor,
            Instant::now() + Duration::from_secs(20),
        )
        .await
        .expect("old client follows Sentinel");
    println!(
        "redis failover: the client connected before the kill locked again after {:?}",
        t0.elapsed()
    );
    old_client.release(lease).await.expect("release");
    // The watchdog follows the failover and finds the key gone (or runs out of validity).
    let lost_at = tokio::time::timeout(cfg.ttl * 2, lost_at)
        .await
        .expect("the lease whose key is gone was never signalled lost")
        .expect("signal task");
    let by = gone_at + cfg.ttl - sc::drift(cfg.ttl);
    println!(
        "redis failover: lease held at the kill signalled lost {:?} after its key was gone",
        lost_at - gone_at
    );
    assert!(
        lost_at <= by + sc::LATE,
        "lost signalled {:?} after the validity left when the key went",
        lost_at - by
    );
    let r = old_client.release(held).await;
    println!("redis failover: releasing the lease held at the kill: {r:?}");
    assert!(
        matches!(r, Err(lockbench::recipe::LockError::Lost { .. })),
        "{r:?}"
    );
    old_client.crash().await;
    fresh.crash().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_recipe_on_a_real_sentinel_cluster() {
    let cluster = common::start(System::Redis, None).await;
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
