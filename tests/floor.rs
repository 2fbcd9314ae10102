//! The handoff floor probe of every system on its real cluster: the samples asked for, none
//! failed, each at least a round trip long, and nothing left under the probe's prefix.

mod common;

use std::time::Duration;

use lockbench::{Cluster, System};

/// Runs `system`'s probe for `samples` under `prefix` on `cluster`.
async fn floor(
    cluster: &Cluster,
    prefix: &str,
    samples: usize,
) -> lockbench::results::floor::FloorSamples {
    let info = cluster.connect_info();
    let probe = lockbench::service::of(cluster.system())
        .floor()
        .expect("every system of the default comparison has a floor probe");
    assert!(!probe.chain.is_empty());
    (probe.run)(&info, prefix, samples)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", cluster.system()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_system_measures_its_floor_and_leaves_nothing_behind() {
    for system in [
        System::Zookeeper,
        System::Etcd,
        System::Redis,
        System::Redlock,
    ] {
        let cluster = common::start(system, None).await;
        let got = floor(&cluster, "/lockbench/floor-test", 40).await;
        assert_eq!(got.times.len(), 40, "{system}: {got:?}");
        assert_eq!(got.failed, 0, "{system}");
        assert!(got.warmup > 0, "{system}: no warm-up was run");
        // Each sample crosses the network at least twice (the release, the taking).
        assert!(
            got.times.iter().all(|t| *t >= Duration::from_micros(50)),
            "{system}: {got:?}"
        );
        let left = leftovers(&cluster).await;
        assert!(left.is_empty(), "{system} left {left:?}");
        common::teardown_and_assert_gone(cluster).await;
    }
}

/// What is left under `/lockbench` (ZooKeeper's nodes, etcd's keys, every Redis master's keys).
async fn leftovers(cluster: &Cluster) -> Vec<String> {
    let info = cluster.connect_info();
    let ops = lockbench::service::of(cluster.system())
        .target_ops()
        .expect("a lister");
    let listed = (ops.list)(&info, None, "/lockbench", 100).await;
    listed.unwrap_or_else(|e| vec![format!("(not listed: {e})")])
}
