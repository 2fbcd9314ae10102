//! etcd lock recipes against a real 3-member cluster: mutual exclusion, herd vs predecessor
//! (and the server-side Lock) wake-ups, FIFO and fencing, crash, stale-release isolation and
//! deadlines. One cluster for every scenario (distinct keys), to keep CI time low. The
//! scenarios themselves live in `common::session_scenarios`, shared with ZooKeeper.

mod common;

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use etcd_client::GetOptions;
use futures::FutureExt;
use lockbench::System;
use lockbench::recipe::{EtcdRecipe, Strategy};

use common::session_scenarios::{self as sc, Expiry, PREFIX, config};

const ALL: [Strategy; 3] = [Strategy::Herd, Strategy::Predecessor, Strategy::Native];

async fn client(eps: &[String], ttl: Duration) -> EtcdRecipe {
    EtcdRecipe::connect(eps, config(ttl))
        .await
        .expect("connect to etcd")
}

async fn raw(eps: &[String]) -> etcd_client::Client {
    let urls: Vec<String> = eps.iter().map(|e| format!("http://{e}")).collect();
    etcd_client::Client::connect(urls, None)
        .await
        .expect("raw etcd client")
}

/// Every key of lock `key` (the herd key and the queue under it), with create revisions.
async fn keys(raw: &etcd_client::Client, key: &str) -> Vec<(String, i64)> {
    let mut c = raw.clone();
    let r = c
        .get(
            format!("{PREFIX}/{key}"),
            Some(GetOptions::new().with_prefix()),
        )
        .await
        .expect("get keys");
    r.kvs()
        .iter()
        .map(|kv| {
            (
                String::from_utf8_lossy(kv.key()).into_owned(),
                kv.create_revision(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_recipes() {
    let cluster = common::start(System::Etcd, Some(3)).await;
    let eps = cluster.endpoints();
    let make = |ttl| client(&eps, ttl);
    let run = AssertUnwindSafe(async {
        sc::contention(&make, "etcd", Duration::from_secs(10), &ALL).await;
        for s in ALL {
            sc::crash(&make, "etcd", s).await;
            let raw = raw(&eps).await;
            let expiry = Expiry {
                // Expire a's lease early, as the server would after a missed TTL.
                expire: async |a: &EtcdRecipe| {
                    let id = a.lease_id().await.expect("a has a lease");
                    raw.clone()
                        .lease_revoke(id)
                        .await
                        .expect("revoke a's lease");
                },
                told_within: Duration::from_secs(5),
                regranted_within: Duration::from_secs(5),
                stale_release_may_succeed: false,
                still_held: async |key: &str, token: u64| {
                    let left = keys(&raw, key).await;
                    assert!(
                        left.iter().any(|(_, rev)| *rev as u64 == token),
                        "b's lock key must survive a's stale release: {left:?}"
                    );
                },
            };
            sc::isolation(&make, s, &expiry).await;
            // The server-side Lock may still be cleaning up when the RPC is cancelled: give it
            // a moment.
            let settle = Some(Duration::from_millis(300));
            sc::deadline(
                &make,
                s,
                Duration::from_secs(10),
                settle,
                async |key: &str| keys(&raw, key).await,
            )
            .await;
        }
        // Last: it freezes the whole cluster.
        sc::lost_when_silent(&make, "etcd", &cluster).await;
    })
    .catch_unwind()
    .await;
    common::teardown_and_assert_gone(cluster).await;
    if let Err(panic) = run {
        std::panic::resume_unwind(panic);
    }
}
