//! ZooKeeper lock recipes against a real 3-node ensemble: mutual exclusion, herd vs
//! predecessor wake-ups, FIFO and fencing, crash, stale-release isolation and deadlines. One
//! ensemble for every scenario (distinct keys), to keep CI time low. The scenarios both
//! session-based recipes share live in `common::session_scenarios`, shared with etcd.

mod common;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::FutureExt;
use lockbench::System;
use lockbench::recipe::{BOTH_STRATEGIES, Recipe, Strategy, ZookeeperRecipe};
use zookeeper_client as zk;

use common::session_scenarios::{self as sc, Expiry, PREFIX, config};

async fn client(eps: &[String], ttl: Duration) -> ZookeeperRecipe {
    ZookeeperRecipe::connect(eps, config(ttl))
        .await
        .expect("connect to ZooKeeper")
}

async fn raw(eps: &[String]) -> zk::Client {
    zk::Client::connect(&eps.join(","))
        .await
        .expect("raw ZooKeeper client")
}

async fn children(raw: &zk::Client, key: &str) -> Vec<String> {
    let mut c = raw
        .list_children(&format!("{PREFIX}/{key}"))
        .await
        .unwrap_or_default();
    c.sort();
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn zookeeper_recipes() {
    let cluster = common::start(System::Zookeeper, Some(3)).await;
    let eps = cluster.endpoints();
    let make = |ttl| client(&eps, ttl);
    let run = AssertUnwindSafe(async {
        sc::contention(&make, "zookeeper", Duration::from_secs(6), &BOTH_STRATEGIES).await;
        for s in BOTH_STRATEGIES {
            sc::crash(&make, "zookeeper", s).await;
            let raw = raw(&eps).await;
            let expiry = Expiry {
                // Expire a's session the classic way: open it from a second connection and
                // close it.
                expire: async |a: &ZookeeperRecipe| {
                    let thief = zk::Client::connector()
                        .with_session(a.session_info().await)
                        .connect(&eps.join(","))
                        .await
                        .expect("reopen a's session");
                    drop(thief);
                },
                told_within: Duration::from_secs(10),
                regranted_within: Duration::from_secs(10),
                stale_release_may_succeed: true,
                still_held: async |key: &str, token: u64| {
                    let nodes = children(&raw, key).await;
                    let held = match s {
                        Strategy::Herd => format!("{PREFIX}/{key}/lock"),
                        _ => format!("{PREFIX}/{key}/{}", nodes.first().expect("b's node")),
                    };
                    let stat = raw
                        .check_stat(&held)
                        .await
                        .expect("stat")
                        .expect("b's lock node must survive a's stale release");
                    assert_eq!(stat.czxid as u64, token, "the lock node must be b's");
                },
            };
            sc::isolation(&make, s, &expiry).await;
            sc::deadline(&make, s, Duration::from_secs(6), None, async |key: &str| {
                children(&raw, key).await
            })
            .await;
        }
        own_leftover(&eps).await;
        // Last: it freezes the whole cluster.
        sc::lost_when_silent(&make, "zookeeper", &cluster).await;
    })
    .catch_unwind()
    .await;
    common::teardown_and_assert_gone(cluster).await;
    if let Err(panic) = run {
        std::panic::resume_unwind(panic);
    }
}

/// A queue node of our own session that a lost answer left behind (created here through a
/// second connection on the same session) must not make the client wait for itself.
async fn own_leftover(eps: &[String]) {
    let key = "leftover";
    let a = client(eps, Duration::from_secs(6)).await;
    let session = a.session_info().await;
    let twin = zk::Client::connector()
        .with_session(session.clone())
        // Detached, so that dropping it does not close a's session.
        .with_detached()
        .connect(&eps.join(","))
        .await
        .expect("second connection on a's session");
    let dir = format!("{PREFIX}/{key}");
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    raw(eps)
        .await
        .mkdir(&dir, &persistent)
        .await
        .expect("mkdir");
    // The two connections take the session from each other until the twin is gone: retry.
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let tag = format!("{:x}-", session.id().0 as u64);
    let mut made = Err(zk::Error::ConnectionLoss);
    for _ in 0..20 {
        made = twin
            .create(&format!("{dir}/{tag}lock-"), b"", &ephemeral)
            .await;
        if made.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    made.expect("leftover node");
    drop(twin);
    // Let a's client settle back on its session.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let lease = a
        .acquire(
            key,
            Strategy::Predecessor,
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .expect("a must not wait for its own leftover node");
    a.release(lease).await.expect("a releases");
    let raw = raw(eps).await;
    assert!(
        children(&raw, key).await.is_empty(),
        "the leftover must be gone"
    );
    a.crash().await;
}
