//! Latency between the servers of a real etcd cluster (`peer_latency`): every connection a
//! node opens to another goes through a relay inside its container, so a write's commit (the
//! leader waits for a follower's acknowledgement) gains at least one added round trip, and
//! every handoff with it. The relays must not open a way around a partition: an isolated
//! leader is replaced, and cannot commit, exactly as without them. A restarted member gets its
//! relay again before its server starts. It compares handoffs across cells, so it runs with no
//! other test binary beside it:
// scripts/test: alone

mod common;

use common::cli_run;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions};
use lockbench::check::SafetyVerdict;
use lockbench::cluster::DataOnRestart;
use lockbench::cluster::PeerLatency;
use lockbench::latency::Delay;
use lockbench::stats::CellSummary;
use lockbench::{Cluster, ClusterOptions, System};

fn summary(cell: &Path) -> CellSummary {
    let text = std::fs::read_to_string(cell.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn peer_latency_adds_at_least_a_round_trip_to_every_handoff() {
    let out = cli_run::scratch("peer-latency");
    let args = [
        "--systems",
        "etcd",
        "--strategies",
        "predecessor",
        "--peer-latency",
        "0ms,3ms",
        "--clients",
        "4",
        "--duration",
        "4s",
    ];
    let hot_lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/hot-lock.toml");
    let res = cli_run::run(&out, &args, &[hot_lock]);
    assert!(
        res.status.success(),
        "lockbench run failed: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    let dir = cli_run::latest(&out);
    let cell = |lat: &str| {
        summary(
            &dir.join("cells")
                .join(format!("etcd-predecessor-hot-lock-peer{lat}-c4")),
        )
    };
    let (direct, slowed) = (cell("0ms"), cell("3ms"));
    assert_eq!(direct.peer_latency_us, None);
    assert_eq!(slowed.peer_latency_us, Some(3_000));
    assert_eq!(
        slowed.client_latency_us, None,
        "the clients connect directly"
    );
    for s in [&direct, &slowed] {
        assert_eq!(s.safety.as_ref().unwrap().verdict, SafetyVerdict::Safe);
        assert!(s.handoff_latency_us.count > 10, "{s:?}");
    }
    // 3 ms each way between servers: the release's delete commits only after a follower
    // acknowledged it, one added round trip (6 ms) at least.
    let grew = slowed.handoff_latency_us.p50 as i64 - direct.handoff_latency_us.p50 as i64;
    assert!(
        grew >= 6_000,
        "the handoff p50 grew by only {grew} µs ({} → {})",
        direct.handoff_latency_us.p50,
        slowed.handoff_latency_us.p50
    );
    let index = std::fs::read_to_string(dir.join("plots").join("index.json")).unwrap();
    assert!(index.contains("\"peer-latency-cost\""), "{index}");
    assert!(
        !index.contains("\"latency-cost\""),
        "no client sweep: {index}"
    );
    // Each cluster is recorded, the one with relays under its own name.
    let record = std::fs::read_to_string(dir.join("clusters").join("etcd-peer3ms.json")).unwrap();
    assert!(record.contains("\"peer_latency_us\": 3000"), "{record}");
    let plain = std::fs::read_to_string(dir.join("clusters").join("etcd.json")).unwrap();
    assert!(!plain.contains("peer_latency_us"), "{plain}");
}

async fn client(endpoint: &str) -> Client {
    let opts = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(3));
    Client::connect([format!("http://{endpoint}")], Some(opts))
        .await
        .expect("connect to etcd")
}

/// The median time of `n` puts through `c`.
async fn put_median(c: &mut Client, n: usize) -> Duration {
    let mut times = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        c.put("probe", i.to_string(), None).await.expect("put");
        times.push(t.elapsed());
    }
    times.sort();
    times[n / 2]
}

/// Packets the redirect in `node` has sent to its relay.
async fn redirected(cluster: &Cluster, node: &str) -> u64 {
    let out = cluster
        .node(node)
        .unwrap()
        .exec_script(
            "IPT=iptables; $IPT -w -t nat -L -n >/dev/null 2>&1 || IPT=iptables-legacy\n\
             $IPT -w -t nat -L LB_PEERS -v -n -x | grep REDIRECT",
        )
        .await
        .unwrap_or_else(|e| panic!("{node} has no redirect to its relay: {e}"));
    out.split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no packet count in {out:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_hold_behind_the_relays_and_a_restarted_member_gets_its_relay_again() {
    lockbench::image::ensure(&[System::Etcd.default_version()], &|l| eprintln!("{l}"))
        .await
        .unwrap();
    let opts = ClusterOptions {
        size: Some(3),
        peer_latency: Some(PeerLatency {
            delay: Delay {
                base: Duration::from_millis(3),
                jitter: Duration::ZERO,
            },
            relay_exe: PathBuf::from(env!("CARGO_BIN_EXE_lockbench")),
        }),
        ..Default::default()
    };
    let cluster = Cluster::start(lockbench::service::of(System::Etcd), opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cluster.info().await.peer_latency_us, Some(3_000));
    let leader = cluster.leader().await.unwrap().expect("a leader");
    let mut c = client(&cluster.node(&leader).unwrap().endpoint()).await;
    // A put on the leader commits after a follower's acknowledgement: 6 ms of added round
    // trip at least, through the relays (whose redirect counted the packets).
    let put = put_median(&mut c, 15).await;
    assert!(put >= Duration::from_millis(6), "a put took {put:?}");
    for n in cluster.servers() {
        assert!(redirected(&cluster, n.name()).await > 0, "{}", n.name());
    }

    // Isolate the leader: the others elect a new one, and the old one cannot commit.
    let others: Vec<String> = cluster
        .servers()
        .map(|n| n.name().to_string())
        .filter(|n| *n != leader)
        .collect();
    cluster
        .partition(&[vec![leader.clone()], others.clone()])
        .await
        .unwrap();
    let (new_leader, _) = cluster
        .wait_new_leader(&leader, Duration::from_secs(30))
        .await
        .expect("the majority elects a new leader behind the relays");
    assert!(others.contains(&new_leader), "{new_leader}");
    let isolated_put =
        tokio::time::timeout(Duration::from_secs(5), c.put("split", "x", None)).await;
    assert!(
        !matches!(isolated_put, Ok(Ok(_))),
        "the isolated old leader committed a write: the relays opened a way around the partition"
    );
    cluster.heal().await.unwrap();
    cluster
        .wait_ready(Duration::from_secs(30))
        .await
        .expect("ready after the heal");

    // A killed member restarts with its relay: its redirect is back and it serves.
    let member = others[0].clone();
    cluster.kill(&member).await.unwrap();
    cluster.restart(&member, DataOnRestart::Keep).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster.serving(&member).await.is_err() {
        assert!(Instant::now() < deadline, "{member} did not serve again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        redirected(&cluster, &member).await > 0,
        "{member} restarted without its relay"
    );
    common::teardown_and_assert_gone(cluster).await;
}
