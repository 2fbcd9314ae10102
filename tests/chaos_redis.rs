//! The fault kinds of the chaos seam on real Redis-image clusters, through `nemesis::Faults` as the
//! nemesis will call them: the modelled clock jump and fast clock, a majorities ring cut with
//! iptables and checked from inside every node, Redlock's restart variants, and one `heal_all`
//! that undoes a partition, a node pause and a fast clock together (and is a no-op the second
//! time). One 5-master Redlock cluster with persistence serves them all (the start is the cost).

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use lockbench::cluster::{DataOnRestart, NodeState, RedisOptions};
use lockbench::fault::partition::shape;
use lockbench::fault::{
    ClockEffect, Cut, Fault, Faultable, Killed, Partitioned, PausedNodes, Realism, RedlockRestart,
    Skew, Skewed,
};
use lockbench::nemesis::Faults;
use lockbench::{Cluster, ClusterOptions, System};
use rand::SeedableRng;
use redis::AsyncCommands;

type Connection = redis::aio::MultiplexedConnection;

async fn conn(endpoint: &str) -> Connection {
    let client = redis::Client::open(format!("redis://{endpoint}/")).unwrap();
    let cfg = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .expect("connect to redis")
}

async fn pttl(c: &mut Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query_async(c).await.unwrap()
}

async fn set_px(c: &mut Connection, key: &str, ms: u64) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg("owner")
        .arg("PX")
        .arg(ms)
        .query_async(c)
        .await
        .unwrap();
}

fn clock(node: &str, skew: Skew) -> Fault {
    Fault::Clock(Skewed {
        nodes: vec![node.to_string()],
        skew,
        prefix: "lb/c1".into(),
        realism: Realism::Modelled,
    })
}

/// Which peers each node reaches (a PING from inside it, 1 s deadline), by node name.
async fn reach(cluster: &Cluster, servers: &[String]) -> Vec<(String, BTreeSet<String>)> {
    let mut out = Vec::new();
    for n in servers {
        let mut script = String::new();
        for p in servers.iter().filter(|p| *p != n) {
            let host = cluster.node(p).unwrap().hostname().to_string();
            script.push_str(&format!(
                "(timeout 1 redis-cli -h {host} -p 6379 PING 2>/dev/null | grep -q PONG && echo {p}) &\n"
            ));
        }
        script.push_str("wait\n");
        let seen = cluster.node(n).unwrap().exec_script(&script).await.unwrap();
        let mut set: BTreeSet<String> = seen.split_whitespace().map(String::from).collect();
        set.insert(n.clone());
        out.push((n.clone(), set));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_faults_clock_ring_restarts_and_one_heal() {
    lockbench::image::ensure(&[System::Redlock.default_version()], &|l| eprintln!("{l}"))
        .await
        .unwrap();
    let cluster = Cluster::start(
        lockbench::service::of(System::Redlock),
        ClusterOptions {
            size: Some(5),
            redis: RedisOptions { persistence: true },
            ..Default::default()
        },
    )
    .await
    .expect("start a 5-master redlock cluster");
    let servers = Faultable::servers(&cluster);
    let leader = Faultable::leader(&cluster)
        .await
        .unwrap()
        .expect("a master stands in");
    assert_eq!(
        leader, "redlock1",
        "the first master up is Redlock's `leader`"
    );
    let ep = cluster.node(&leader).unwrap().endpoint();
    let mut c = conn(&ep).await;
    let mut faults = Faults::default();

    assert_clock_jumps(&cluster, &mut faults, &mut c, &leader).await;
    assert_restarts(&cluster, &mut faults, &servers[1]).await;
    let all_ok = assert_ring_cut(&cluster, &mut faults, &servers).await;
    assert_one_heal_undoes_all(&cluster, &mut faults, &mut c, &leader, &all_ok).await;
    common::teardown_and_assert_gone(cluster).await;
}

/// A clock jump of 8 s on a 10 s lock leaves 2 s or less, and nothing outside the prefix
/// moves; a 12 s jump expires a fresh 10 s lock.
async fn assert_clock_jumps(
    cluster: &Cluster,
    faults: &mut Faults,
    c: &mut Connection,
    leader: &str,
) {
    set_px(c, "lb/c1/lock", 10_000).await;
    set_px(c, "lb/c10/lock", 10_000).await; // a sibling prefix
    set_px(c, "other", 10_000).await;
    let _: () = c.set("lb/c1/lock:fence", 7).await.unwrap(); // no TTL
    // Queue-entry deadlines in server milliseconds: the lock's deadline set, a sibling's, and
    // a sorted set of this prefix that holds no deadlines (the queue's tickets).
    for (key, scores) in [
        ("lb/c1/lock:qx", [1_000_000, 2_000_000]),
        ("lb/c10/lock:qx", [1_000_000, 2_000_000]),
        ("lb/c1/lock:q", [1, 2]),
    ] {
        let _: () = c
            .zadd_multiple(key, &[(scores[0], "a"), (scores[1], "b")])
            .await
            .unwrap();
    }
    let started = faults
        .start(cluster, clock(leader, Skew::Jump(Duration::from_secs(8))))
        .await
        .unwrap();
    assert_eq!(
        started.clock,
        [(
            leader.to_string(),
            ClockEffect::Modelled(Cut {
                keys_cut: 1,
                keys_expired: 0,
                deadlines_moved: 2
            })
        )]
    );
    // A jump of 8 s brings each deadline 8 s closer, here and nowhere else.
    for (key, want) in [
        ("lb/c1/lock:qx", [992_000, 1_992_000]),
        ("lb/c10/lock:qx", [1_000_000, 2_000_000]),
        ("lb/c1/lock:q", [1, 2]),
    ] {
        let got: Vec<(String, i64)> = c.zrange_withscores(key, 0, -1).await.unwrap();
        assert_eq!(
            got,
            [("a".to_string(), want[0]), ("b".to_string(), want[1])],
            "{key}"
        );
    }
    let left = pttl(c, "lb/c1/lock").await;
    assert!(
        (1..=2_000).contains(&left),
        "PTTL after an 8 s jump: {left}"
    );
    for key in ["lb/c10/lock", "other"] {
        let p = pttl(c, key).await;
        assert!(p > 8_000, "{key} outside the prefix was touched: PTTL {p}");
    }
    assert_eq!(pttl(c, "lb/c1/lock:fence").await, -1, "no-TTL key kept");
    // A 12 s jump on a fresh 10 s lock expires it.
    set_px(c, "lb/c1/lock", 10_000).await;
    let started = faults
        .start(cluster, clock(leader, Skew::Jump(Duration::from_secs(12))))
        .await
        .unwrap();
    assert_eq!(
        started.clock[0].1,
        ClockEffect::Modelled(Cut {
            keys_cut: 0,
            keys_expired: 1,
            deadlines_moved: 2
        })
    );
    assert_eq!(pttl(c, "lb/c1/lock").await, -2, "the lock key is gone");
    faults.heal_all(cluster).await.unwrap();
    eprintln!("clock: 8 s jump left {left} ms of a 10 s lock; 12 s jump expired it");
}

/// Redlock restarts of `victim`, with persistence: keep keeps, empty and delayed wipe.
async fn assert_restarts(cluster: &Cluster, faults: &mut Faults, victim: &str) {
    let victim = victim.to_string();
    let vep = cluster.node(&victim).unwrap().endpoint();
    let mut v = conn(&vep).await;
    let _: () = v.set("lb/c1/held", "x").await.unwrap();
    let keep = Fault::Kill(Killed {
        nodes: vec![victim.clone()],
        data: DataOnRestart::Keep,
    });
    faults.start(cluster, keep).await.unwrap();
    assert_eq!(cluster.node(&victim).unwrap().state(), NodeState::Killed);
    faults.end_last(cluster).await.unwrap();
    cluster.wait_ready(Duration::from_secs(30)).await.unwrap();
    let mut v = conn(&vep).await;
    let kept: Option<String> = v.get("lb/c1/held").await.unwrap();
    assert_eq!(
        kept.as_deref(),
        Some("x"),
        "a keep restart with AOF kept the key"
    );
    let (empty, down) = RedlockRestart::Empty.plan(vec![victim.clone()], Duration::from_secs(1));
    assert_eq!(down, Duration::ZERO);
    faults.start(cluster, empty).await.unwrap();
    faults.end_last(cluster).await.unwrap();
    cluster.wait_ready(Duration::from_secs(30)).await.unwrap();
    let mut v = conn(&vep).await;
    let gone: Option<String> = v.get("lb/c1/held").await.unwrap();
    assert_eq!(gone, None, "redlock-restart-empty came back with the key");
    let _: () = v.set("lb/c1/held", "y").await.unwrap();
    let (delayed, down) =
        RedlockRestart::Delayed.plan(vec![victim.clone()], Duration::from_secs(1));
    let t = Instant::now();
    faults.start(cluster, delayed).await.unwrap();
    tokio::time::sleep(down).await;
    faults.end_last(cluster).await.unwrap();
    cluster.wait_ready(Duration::from_secs(30)).await.unwrap();
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(1_012), "down {took:?}");
    let mut v = conn(&vep).await;
    let gone: Option<String> = v.get("lb/c1/held").await.unwrap();
    assert_eq!(gone, None, "redlock-restart-delayed came back with the key");
    eprintln!(
        "restarts: keep kept the key; empty and delayed ({:.2} s down) came back empty",
        took.as_secs_f64()
    );
}

/// A majorities ring, cut by iptables: each node reaches exactly the peers the grudge keeps.
/// Returns what every node reaches when nothing is cut.
async fn assert_ring_cut(
    cluster: &Cluster,
    faults: &mut Faults,
    servers: &[String],
) -> Vec<(String, BTreeSet<String>)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let grudge = shape::majorities_ring(servers, &mut rng).unwrap();
    let all_ok: Vec<(String, BTreeSet<String>)> = servers
        .iter()
        .map(|n| (n.clone(), servers.iter().cloned().collect()))
        .collect();
    assert_eq!(reach(cluster, servers).await, all_ok, "before the cut");
    faults
        .start(
            cluster,
            Fault::Partition(Partitioned {
                grudge: grudge.clone(),
            }),
        )
        .await
        .unwrap();
    let seen = reach(cluster, servers).await;
    for (n, s) in &seen {
        assert_eq!(*s, grudge.sees(n, servers), "{n} reaches");
        assert_eq!(s.len(), 3, "{n} sees a majority of 5");
    }
    let distinct: BTreeSet<&BTreeSet<String>> = seen.iter().map(|(_, s)| s).collect();
    assert_eq!(distinct.len(), 5, "no two nodes see the same majority");

    all_ok
}

/// A paused node and a fast clock on top of the cut, then one heal undoes all three.
async fn assert_one_heal_undoes_all(
    cluster: &Cluster,
    faults: &mut Faults,
    c: &mut Connection,
    leader: &str,
    all_ok: &[(String, BTreeSet<String>)],
) {
    let servers = Faultable::servers(cluster);
    set_px(c, "lb/c1/fast", 60_000).await;
    let set_at = Instant::now();
    faults
        .start(
            cluster,
            Fault::PauseNode(PausedNodes {
                nodes: vec![servers[3].clone()],
            }),
        )
        .await
        .unwrap();
    let fast = Skew::Fast {
        every: Duration::from_millis(200),
        jump: Duration::from_secs(5),
    };
    faults.start(cluster, clock(leader, fast)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(faults.clock_ticking());
    faults.heal_all(cluster).await.unwrap();
    assert!(faults.is_empty() && !faults.clock_ticking());
    let totals = faults.fast_clock_totals();
    assert!(totals.jumps >= 2 && totals.failed == 0, "{totals:?}");
    let a = pttl(c, "lb/c1/fast").await;
    let lived = set_at.elapsed().as_millis() as i64;
    // 60 s less the first jump, less one 5 s jump per counted tick, less the time it lived
    // (the SET ran up to a round trip before `set_at`: 50 ms of slack).
    let expected = 60_000 - 5_000 * (1 + totals.jumps as i64);
    assert!(
        a <= expected && a >= expected - lived - 50,
        "PTTL {a} after {} ticks and {lived} ms: every jump the server ran is counted",
        totals.jumps
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let b = pttl(c, "lb/c1/fast").await;
    assert!(
        a - b < 2_000,
        "the clock still jumps after heal: {a} -> {b}"
    );
    assert_eq!(
        cluster.node(&servers[3]).unwrap().state(),
        NodeState::Running
    );
    assert_eq!(reach(cluster, &servers).await, all_ok, "after heal");
    // A second heal has nothing left to undo.
    faults.heal_all(cluster).await.unwrap();
    eprintln!(
        "ring and heal: each node saw 3 of 5 while cut; fast clock made {} jumps; PTTL {a} ms after heal, {b} ms 0.6 s later",
        totals.jumps
    );
}

/// `role` from `INFO replication` of the server at `endpoint`; `None` while it does not answer
/// (a restarted server takes a moment to listen).
async fn role(endpoint: &str) -> Option<String> {
    let client = redis::Client::open(format!("redis://{endpoint}/")).ok()?;
    let cfg = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)));
    let mut c = client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .ok()?;
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut c)
        .await
        .ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .map(|r| r.trim().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_leader_kill_and_restart_rejoins_as_a_replica() {
    let cluster = common::start(System::Redis, None).await;
    let master = Faultable::leader(&cluster)
        .await
        .unwrap()
        .expect("sentinel names a master");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let targets = lockbench::fault::resolve(
        lockbench::fault::Target::Leader,
        &Faultable::servers(&cluster),
        Some(&master),
        &mut rng,
    )
    .unwrap();
    assert_eq!(targets, std::slice::from_ref(&master));
    let mut faults = Faults::default();
    // A clock jump on the master and a replica: the master takes the cut, the replica refuses
    // it (READONLY). The start is partial, with each node's effect, not "did not start".
    let replica = Faultable::servers(&cluster)
        .into_iter()
        .find(|n| *n != master)
        .unwrap();
    let mut m = conn(&cluster.node(&master).unwrap().endpoint()).await;
    // Long enough to be cut, not expired, so the replica still has a key to write to.
    set_px(&mut m, "lb/c1/lock", 100_000).await;
    let mut r = conn(&cluster.node(&replica).unwrap().endpoint()).await;
    let mut replicated = false;
    for _ in 0..50 {
        if pttl(&mut r, "lb/c1/lock").await > 0 {
            replicated = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(replicated, "{replica} never got the key");
    let both = Fault::Clock(Skewed {
        nodes: vec![master.clone(), replica.clone()],
        skew: Skew::Jump(Duration::from_secs(30)),
        prefix: "lb/c1".into(),
        realism: Realism::Modelled,
    });
    let started = faults.start(&cluster, both).await.unwrap();
    assert!(started.partial(), "{started:?}");
    assert_eq!(
        started.clock[0],
        (
            master.clone(),
            ClockEffect::Modelled(Cut {
                keys_cut: 1,
                keys_expired: 0,
                deadlines_moved: 0
            })
        )
    );
    let words = started.describe().unwrap();
    assert!(
        words.starts_with("partial: modelled: no server clock is changed")
            && words.contains(&format!("{replica}: refused ("))
            && words.contains("read only replica"),
        "{words}"
    );
    faults.heal_all(&cluster).await.unwrap();
    let t = Instant::now();
    faults
        .start(
            &cluster,
            Fault::Kill(Killed {
                nodes: targets,
                data: DataOnRestart::Wipe,
            }),
        )
        .await
        .unwrap();
    let (new_master, promoted) = cluster
        .wait_new_leader(&master, Duration::from_secs(60))
        .await
        .unwrap();
    assert_ne!(new_master, master);
    faults.heal_all(&cluster).await.unwrap();
    // The old master restarts as a master (its own config) and Sentinel demotes it.
    let old = cluster.node(&master).unwrap().endpoint();
    let mut demoted = None;
    while t.elapsed() < Duration::from_secs(60) {
        if role(&old).await.as_deref() == Some("slave") {
            demoted = Some(t.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let demoted = demoted.expect("the restarted old master never became a replica");
    assert_eq!(
        Faultable::leader(&cluster).await.unwrap().as_deref(),
        Some(new_master.as_str()),
        "Sentinel still names the promoted master"
    );
    faults.heal_all(&cluster).await.unwrap();
    eprintln!(
        "sentinel: killed master {master}; {new_master} promoted after {:.2} s; restarted {master} a replica {:.2} s after the kill",
        promoted.as_secs_f64(),
        demoted.as_secs_f64()
    );
    common::teardown_and_assert_gone(cluster).await;
}
