//! A target's key listing on ZooKeeper rides out a lost quorum, on a 3-node ensemble of its own.
//!
//! Two of the three servers are killed for longer than one try's connect time (15 s), so the
//! ZooKeeper client cannot move its session to a server that serves (as it does by itself when
//! one leader is killed: the `leader_change` scenarios of `recipe_zookeeper` list right after a
//! kill and pass without any retry), and only the retry on a new session
//! (`src/service/zookeeper/keys.rs`, `with_retries`) gets the listing through. Taken out, the
//! listing failed with "connect to ZooKeeper at …: timeout".
//!
//! Its own binary and ensemble: on `recipe_zookeeper`'s shared ensemble the lost quorum ended the
//! fixture's raw client's session and, run in the binary's order, made a later scenario fail.

mod common;

use std::time::{Duration, Instant};

use common::shared::{Shared, no_state};
use lockbench::System;
use lockbench::cluster::DataOnRestart;
use zookeeper_client as zk;

static ZOOKEEPER: Shared<()> = Shared::new(
    System::Zookeeper,
    Some(3),
    Duration::from_secs(120),
    no_state,
);

/// Where the marker node goes: a prefix of this binary's own.
const PREFIX: &str = "/lost-quorum";

/// How long the two servers stay down: longer than one try's connect time (15 s).
const OUTAGE: Duration = Duration::from_secs(18);

#[test]
fn zookeeper_key_listing_rides_out_a_lost_quorum() {
    ZOOKEEPER.run("key-listing-lost-quorum", |f| async move {
        let marker = format!("{PREFIX}/marker");
        let raw = zk::Client::connect(&f.endpoints.join(","))
            .await
            .expect("a raw ZooKeeper client");
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        for path in [PREFIX, marker.as_str()] {
            match raw.mkdir(path, &persistent).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => panic!("mkdir {path}: {e}"),
            }
        }
        drop(raw);
        let killed: Vec<String> = f.cluster.nodes()[..2]
            .iter()
            .map(|n| n.name().to_string())
            .collect();
        for n in &killed {
            f.cluster.kill(n).await.expect("kill a server");
        }
        let killed_at = Instant::now();
        let ops = lockbench::service::of(System::Zookeeper)
            .target_ops()
            .expect("ZooKeeper lists a target's keys");
        let info = f.cluster.connect_info();
        let listing = async {
            let listed = (ops.list)(&info, None, PREFIX, 10_000).await;
            (listed, killed_at.elapsed())
        };
        // Both come back together, as after a shared outage: one at a time, each container's
        // start waits for the one before, which on a loaded machine moves the quorum's return
        // toward the end of the listing's 30 s of retries.
        let outage = async {
            tokio::time::sleep(OUTAGE).await;
            let restarts = killed
                .iter()
                .map(|n| f.cluster.restart(n, DataOnRestart::Keep));
            for r in futures::future::join_all(restarts).await {
                r.expect("restart a killed server");
            }
            killed_at.elapsed()
        };
        let ((listed, took), back) = tokio::join!(listing, outage);
        eprintln!(
            "a key listing started with two of three servers down answered after {took:?} (both \
             servers restarted {back:?} after the kill)"
        );
        let listed = listed.unwrap_or_else(|e| {
            panic!(
                "the key listing must ride out the lost quorum: it failed after {took:?}, the \
                 servers restarted {back:?} after the kill: {e}"
            )
        });
        assert!(
            listed.contains(&marker),
            "the listing must find {marker}: {listed:?}"
        );
        assert!(
            took >= OUTAGE,
            "the listing answered after {took:?}, before the servers were back: no quorum was lost"
        );
    });
}
