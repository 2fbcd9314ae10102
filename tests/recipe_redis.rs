//! The Redis (Sentinel) lock recipe against a real master + 2 replicas + 3 Sentinels.
//! Each scenario is its own test (`cargo test --test recipe_redis sentinel_failover` runs one,
//! `herd::` or `predecessor::` picks a strategy of a shared one); they share one cluster
//! (distinct keys and prefixes, one at a time), removed when the binary exits
//! (`common::shared`). The scenarios shared with Redlock live in `common::redis_scenarios`.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use lockbench::cluster::{DataOnRestart, NodeRole};
use lockbench::recipe::{Recipe, RecipeConfig, Strategy};
use lockbench::service::redis::recipe::{RedisRecipe, RedisTarget};
use lockbench::{Cluster, System};

use common::broken_scenarios as broken;
use common::redis_scenarios::{self as sc, Common, common_tests, config};
use common::shared::{Fixture, Shared, no_state};

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

/// The Sentinel cluster every test of this file shares.
static REDIS: Shared<()> = Shared::new(System::Redis, None, Duration::from_secs(180), no_state);

/// The master Sentinel names now (a failover scenario may have moved it), and its endpoint.
async fn master(cluster: &Cluster) -> (String, String) {
    let leader = cluster.leader().await.expect("leader").expect("a master");
    let endpoint = cluster.node(&leader).expect("master node").endpoint();
    (leader, endpoint)
}

/// Runs `scenario` on the shared cluster with a client maker that follows Sentinel, the
/// master's name and its endpoint.
fn on_master<Fut>(name: &str, scenario: impl FnOnce(&'static Fixture<()>, String, String) -> Fut)
where
    Fut: std::future::Future<Output = ()>,
{
    REDIS.run(name, |f| async move {
        let (leader, endpoint) = master(&f.cluster).await;
        scenario(f, leader, endpoint).await;
    });
}

fn shared_scenario(scenario: Common, st: Strategy) {
    on_master(
        &format!("redis/{st}/{scenario:?}"),
        |f, _, endpoint| async move {
            let t = target(&f.cluster);
            let make = |cfg: RecipeConfig| connect(&t, cfg);
            sc::common(&make, "redis", scenario, st, &[endpoint], BANDS).await;
        },
    );
}

common_tests!(shared_scenario);

// The known-broken designs (unsafe, for calibration), beside the correct herd.
#[test]
fn unsafe_del_stale_release_and_the_next_holder() {
    stale_release_and_the_next_holder(Strategy::UnsafeDel);
}
#[test]
fn herd_stale_release_and_the_next_holder() {
    stale_release_and_the_next_holder(Strategy::Herd);
}

fn stale_release_and_the_next_holder(st: Strategy) {
    let name = format!("redis/{st}/stale_release_and_the_next_holder");
    on_master(&name.clone(), |f, _, endpoint| async move {
        let t = target(&f.cluster);
        let make = |cfg: RecipeConfig| connect(&t, cfg);
        broken::stale_release(&make, &name, st, &endpoint).await;
    });
}

#[test]
fn unsafe_setnx_expire_crash_leaves_a_key_without_ttl() {
    let name = "redis/unsafe-setnx-expire/crash_leaves_a_key_without_ttl";
    on_master(name, |f, _, endpoint| async move {
        let t = target(&f.cluster);
        let make = |cfg: RecipeConfig| connect(&t, cfg);
        broken::setnx_crash_leaves_key_forever(&make, name, &endpoint).await;
    });
}

#[test]
fn unsafe_setnx_expire_without_crashes_it_locks() {
    let name = "redis/unsafe-setnx-expire/without_crashes_it_locks";
    on_master(name, |f, _, endpoint| async move {
        let t = target(&f.cluster);
        let make = |cfg: RecipeConfig| connect(&t, cfg);
        broken::setnx_without_crashes_locks(&make, name, &endpoint).await;
    });
}

#[test]
fn unsafe_setnx_expire_every_nth_acquisition_crashes() {
    let name = "redis/unsafe-setnx-expire/every_nth_acquisition_crashes";
    on_master(name, |f, _, endpoint| async move {
        let t = target(&f.cluster);
        let make = |cfg: RecipeConfig| connect(&t, cfg);
        broken::setnx_every_nth_crashes(&make, name, &endpoint).await;
    });
}

#[test]
fn unknown_outcome_resolved_herd_free() {
    unknown_outcome_resolved(Strategy::Herd, false);
}
#[test]
fn unknown_outcome_resolved_herd_busy() {
    unknown_outcome_resolved(Strategy::Herd, true);
}
#[test]
fn unknown_outcome_resolved_predecessor_free() {
    unknown_outcome_resolved(Strategy::Predecessor, false);
}
#[test]
fn unknown_outcome_resolved_predecessor_busy() {
    unknown_outcome_resolved(Strategy::Predecessor, true);
}

fn unknown_outcome_resolved(st: Strategy, busy: bool) {
    let label = format!(
        "redis/{st}/unknown_outcome_resolved/{}",
        if busy { "busy" } else { "free" }
    );
    on_master(&label.clone(), |f, leader, endpoint| async move {
        let (cluster, t) = (&f.cluster, target(&f.cluster));
        let make = |cfg: RecipeConfig| connect(&t, cfg);
        let master_ep = [endpoint];
        sc::unknown_outcome_resolved(
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
        )
        .await;
    });
}

#[test]
fn unanswered_release_retried() {
    let label = "redis/unanswered_release_retried";
    on_master(label, |f, leader, endpoint| async move {
        let (cluster, t) = (&f.cluster, target(&f.cluster));
        let make = |cfg: RecipeConfig| connect(&t, cfg);
        sc::unanswered_release_retried(
            &make,
            label,
            config("/t/lost-release", Duration::from_secs(10), true),
            &[endpoint],
            cut_master(cluster, &leader),
            mend_master(cluster, &leader),
        )
        .await;
    });
}

#[test]
fn lost_before_expiry_when_master_paused_ttl_2s() {
    lost_before_expiry_when_master_paused(2);
}
#[test]
fn lost_before_expiry_when_master_paused_ttl_10s() {
    lost_before_expiry_when_master_paused(10);
}

fn lost_before_expiry_when_master_paused(ttl: u64) {
    let label = format!("redis/lost_before_expiry_when_master_paused/ttl-{ttl}s");
    on_master(&label.clone(), |f, leader, endpoint| async move {
        let (cluster, t) = (&f.cluster, target(&f.cluster));
        let make = |cfg: RecipeConfig| connect(&t, cfg);
        let cfg = config("/t/paused", Duration::from_secs(ttl), true);
        sc::lost_before_expiry_when_paused(
            &make,
            &label,
            cfg,
            &endpoint,
            pause_master(cluster, &leader),
            resume_master(cluster, &leader),
        )
        .await;
    });
}

#[test]
fn sentinel_failover() {
    REDIS.run("redis/sentinel_failover", |f| async move {
        failover(&f.cluster, &target(&f.cluster)).await;
    });
}

/// Freezes the master with Sentinel told to wait a minute first: a failover would move the
/// lock to a replica that has it, where the watchdog's renewal would rightly succeed.
async fn pause_master(cluster: &Cluster, master: &str) {
    sc::set_down_after(cluster, 60_000).await;
    cluster.pause(master).await.expect("pause the master");
}

async fn resume_master(cluster: &Cluster, master: &str) {
    cluster.resume(master).await.expect("resume the master");
    sc::set_down_after(cluster, sc::SENTINEL_DOWN_MS).await;
}

/// Resets every connection to the master's port and refuses new ones (Sentinel told to wait a
/// minute first, as for a pause): a request sent now is lost, not delayed.
async fn cut_master(cluster: &Cluster, master: &str) {
    sc::set_down_after(cluster, 60_000).await;
    common::reject_port(cluster, master, true).await;
}

async fn mend_master(cluster: &Cluster, master: &str) {
    common::reject_port(cluster, master, false).await;
    sc::set_down_after(cluster, sc::SENTINEL_DOWN_MS).await;
}

/// A key [`failover`] writes before the kill, which its target listing must find after it.
const MARKER: &str = "/t/failover/marker";

/// Writes `key` on the master of `cluster` at `endpoint` and waits until every replica has it
/// (`WAIT` on the connection that wrote it).
async fn replicate_to_all(cluster: &Cluster, endpoint: &str, key: &str) {
    let servers = cluster
        .nodes()
        .iter()
        .filter(|n| n.role() == NodeRole::Server)
        .count();
    let replicas = servers as i64 - 1;
    let mut con = sc::connection(endpoint).await;
    let (_, acked): (String, i64) = redis::pipe()
        .cmd("SET")
        .arg(key)
        .arg(1)
        .cmd("WAIT")
        .arg(replicas)
        .arg(1500)
        .query_async(&mut con)
        .await
        .expect("SET and WAIT");
    assert_eq!(acked, replicas, "every replica has {key}");
}

/// A target's listing of the keys under `/t/failover` on `cluster`, as a run on it makes.
async fn list_target_keys(cluster: &Cluster, killed_at: Instant) -> Vec<String> {
    let ops = lockbench::service::of(System::Redis)
        .target_ops()
        .expect("Redis lists a target's keys");
    let listed = (ops.list)(&cluster.connect_info(), None, "/t/failover", 100).await;
    println!(
        "redis failover: a key listing started at the kill answered after {:?}: {listed:?}",
        killed_at.elapsed()
    );
    match listed {
        Ok(keys) => keys,
        Err(e) => panic!(
            "the key listing rides out the failover: {e}; the Sentinels: {}",
            cluster.leadership_view().await
        ),
    }
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
    // Watched from before the kill: a task started after the failover would stamp a signal
    // fired seconds earlier with the time it first looked (Sentinel took 7 s to fail over once,
    // and the lease, rightly lost at 5 s, read as 2.4 s late).
    let mut signal = held.lost.clone();
    let lost_at = tokio::spawn(async move {
        signal.wait().await;
        Instant::now()
    });
    // A key every replica has before the kill, so the new master has it too.
    let old_ep = cluster.node(&leader).expect("node").endpoint();
    replicate_to_all(cluster, &old_ep, MARKER).await;
    cluster.kill(&leader).await.expect("kill master");
    // The master is certainly dead now (`kill` waits until the engine reports the container
    // stopped), not at the call: on a busy host the engine took seconds to kill it, and the
    // master went on renewing the lease until then.
    let killed_at = Instant::now();
    // A target's key listing started now, while Sentinel still names the dead master, rides out
    // the failover (asking the Sentinels again on every try) and lists the new master's keys.
    let listed = list_target_keys(cluster, killed_at).await;
    let (new_leader, elected) = cluster
        .wait_new_leader(&leader, Duration::from_secs(60))
        .await
        .expect("failover");
    let new_ep = cluster.node(&new_leader).expect("node").endpoint();
    assert!(
        listed.contains(&format!("{MARKER} (on {new_ep})")),
        "the listing must come from the new master {new_ep}: {listed:?}"
    );
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
    let lost_at = tokio::time::timeout(cfg.ttl * 2, lost_at).await;
    let r = old_client.release(held).await;
    old_client.crash().await;
    fresh.crash().await;
    // The old master comes back as a replica of the new one, so the next scenario (which
    // waits for the cluster to be ready) finds the whole cluster again; before the checks
    // below, so that a failed one leaves the cluster whole.
    cluster
        .restart(&leader, DataOnRestart::Keep)
        .await
        .expect("restart the killed master");
    let lost_at = lost_at
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
    println!("redis failover: releasing the lease held at the kill: {r:?}");
    assert!(
        matches!(r, Err(lockbench::recipe::LockError::Lost { .. })),
        "{r:?}"
    );
}

#[test]
fn herd_shared_kinds_grant_by_the_rule_and_leave_nothing() {
    shared_kinds(Strategy::Herd);
}
#[test]
fn predecessor_shared_kinds_grant_by_the_rule_and_leave_nothing() {
    shared_kinds(Strategy::Predecessor);
}

/// The read-write lock and the semaphore (`service/redis/recipe/shared.rs`): readers share, a writer
/// waits for them and a reader behind a waiting writer waits for it (FIFO); N permits hold
/// at once and the next waits; an acquisition that times out leaves no queue entry behind; a
/// release wakes the waiter it lets in well before the fallback poll.
fn shared_kinds(st: Strategy) {
    use lockbench::recipe::{Claim, LockError, Tally};
    let label = format!("redis/{st}/shared_kinds");
    on_master(&label.clone(), |f, _, endpoint| async move {
        let t = target(&f.cluster);
        let prefix = format!("/t/kinds-{st}");
        let cfg = config(&prefix, Duration::from_secs(10), true);
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(connect(&t, cfg.clone()).await);
        }
        let take = |i: usize, key: &'static str, claim: Claim, wait_ms: u64| {
            let c = &clients[i];
            async move {
                let deadline = Instant::now() + Duration::from_millis(wait_ms);
                c.acquire_claim(key, st, claim, deadline, &Tally::default())
                    .await
            }
        };
        let queued = |key: &'static str| {
            let (ep, q) = (endpoint.clone(), format!("{prefix}/{key}:q"));
            async move {
                let v = sc::raw(&ep, redis::cmd("ZCARD").arg(&q)).await;
                redis::from_redis_value::<i64>(v).expect("ZCARD answers a count")
            }
        };
        let timed_out = |r: Result<_, LockError>| matches!(r, Err(LockError::Timeout { .. }));

        // Read-write lock: two readers share; a writer waits and leaves nothing when it gives
        // up; once the readers are gone it holds, and a reader behind it waits.
        let r1 = take(0, "rw", Claim::Read, 2000).await.expect("reader 1");
        let r2 = take(1, "rw", Claim::Read, 2000)
            .await
            .expect("reader 2 shares");
        assert!(r2.token > r1.token, "{label}: tokens grow with every grant");
        assert!(timed_out(take(2, "rw", Claim::Write, 300).await), "{label}");
        assert_eq!(
            queued("rw").await,
            2,
            "{label}: the timed-out writer left its entry"
        );
        let writer = {
            let w = take(2, "rw", Claim::Write, 5000);
            let release = async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                clients[0].release(r1).await.expect("release reader 1");
                clients[1].release(r2).await.expect("release reader 2");
                Instant::now()
            };
            let (w, released) = tokio::join!(w, release);
            let w = w.expect("the writer holds once the readers left");
            // Woken by the release, not by the 500 ms fallback poll.
            assert!(
                w.acquired_at.saturating_duration_since(released) < Duration::from_millis(300),
                "{label}: the writer was granted {:?} after the last reader left",
                w.acquired_at.saturating_duration_since(released)
            );
            w
        };
        assert!(
            timed_out(take(3, "rw", Claim::Read, 300).await),
            "{label}: FIFO"
        );
        clients[2]
            .release(writer)
            .await
            .expect("release the writer");
        assert_eq!(queued("rw").await, 0, "{label}");

        // Semaphore of 2: two hold, the third waits, leaves nothing when it gives up, and
        // holds once a permit comes back.
        let p = Claim::Permit { permits: 2 };
        let a = take(0, "sem", p, 2000).await.expect("permit 1");
        let b = take(1, "sem", p, 2000).await.expect("permit 2");
        assert!(
            timed_out(take(2, "sem", p, 300).await),
            "{label}: a third permit"
        );
        assert_eq!(queued("sem").await, 2, "{label}");
        let (c, _) = tokio::join!(take(2, "sem", p, 5000), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            clients[0].release(a).await.expect("release permit 1");
        });
        let c = c.expect("the waiter takes the permit given back");
        for (i, l) in [(1, b), (2, c)] {
            clients[i].release(l).await.expect("release");
        }
        assert_eq!(queued("sem").await, 0, "{label}");
        // A release of a lease no longer held says so.
        let stale_cfg = RecipeConfig {
            ttl: Duration::from_millis(300),
            renew: false,
            ..cfg.clone()
        };
        let short = connect(&t, stale_cfg).await;
        let l = short
            .acquire_claim(
                "sem",
                st,
                p,
                Instant::now() + Duration::from_secs(2),
                &Tally::default(),
            )
            .await
            .expect("permit");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            l.lost.is_lost(),
            "{label}: the lost signal fired at the lease's end"
        );
        assert!(
            matches!(short.release(l).await, Err(LockError::Lost { .. })),
            "{label}"
        );
    });
}
