//! etcd lock recipes against a real 3-member cluster: mutual exclusion, herd vs predecessor
//! (and the server-side Lock) wake-ups, FIFO and fencing, crash, stale-release isolation,
//! deadlines, expiry while waiting, a leader change, and a client holding one key while
//! acquiring another. One cluster for every scenario (distinct keys), to keep CI time low; each
//! scenario reports its name. The scenarios live in `common::session_scenarios`, shared with
//! ZooKeeper.

mod common;

use std::time::Duration;

use etcd_client::{GetOptions, PutOptions};
use lockbench::System;
use lockbench::recipe::{EtcdRecipe, Strategy};

use common::Scenarios;
use common::session_scenarios::{self as sc, Expect, Expiry, Leftover, PREFIX, config};

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

/// Ends a's lease early, as the server would after a missed TTL.
async fn revoke(raw: &etcd_client::Client, a: &EtcdRecipe) {
    let id = a.lease_id().await.expect("a has a lease");
    raw.clone()
        .lease_revoke(id)
        .await
        .expect("revoke a's lease");
}

/// Requests per acquisition (16 clients × 30, hold 1-5 ms), measured three times with
/// `cargo test --test recipe_etcd -- --nocapture`: herd 15.0, 14.9, 15.0 (a txn per wake-up,
/// ~12 wake-ups each, and one watch), predecessor 5.04, 5.10, 5.05 (queue txn, predecessor
/// read, watch, read after the wake-up, own-key re-check), native 2.00 (Lock, get). The bands
/// leave room for noise on 2 cores; a spin loop or a retry storm leaves them.
fn expect(strategy: Strategy) -> Expect {
    match strategy {
        Strategy::Herd => Expect {
            requests: (6.0, 60.0),
            max_fallback_polls: 480,
        },
        Strategy::Predecessor => Expect {
            requests: (4.0, 8.0),
            max_fallback_polls: 24,
        },
        Strategy::Native => Expect {
            requests: (2.0, 2.5),
            max_fallback_polls: 0,
        },
        other => panic!("etcd offers no {other} strategy"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_recipes() {
    let cluster = common::start(System::Etcd, Some(3)).await;
    let eps = cluster.endpoints();
    let make = |ttl| client(&eps, ttl);
    let raw = raw(&eps).await;
    let mut run = Scenarios::new(Duration::from_secs(180));
    for s in ALL {
        run.run(
            &format!("contention-{s}"),
            Box::pin(sc::contention(
                &make,
                "etcd",
                Duration::from_secs(10),
                s,
                &expect(s),
            )),
        )
        .await;
    }
    for s in ALL {
        run.run(&format!("crash-{s}"), Box::pin(sc::crash(&make, "etcd", s)))
            .await;
        let expiry = Expiry {
            expire: async |a: &EtcdRecipe| revoke(&raw, a).await,
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
        run.run(
            &format!("isolation-{s}"),
            Box::pin(sc::isolation(&make, s, &expiry)),
        )
        .await;
        run.run(
            &format!("deadline-{s}"),
            Box::pin(sc::deadline(
                &make,
                s,
                Duration::from_secs(10),
                async |key: &str| keys(&raw, key).await,
            )),
        )
        .await;
        run.run(
            &format!("waiter-expiry-{s}"),
            Box::pin(sc::waiter_expiry(
                &make,
                s,
                async |b: &EtcdRecipe| revoke(&raw, b).await,
                async |key: &str| keys(&raw, key).await,
            )),
        )
        .await;
        if s != Strategy::Native {
            // The server writes native keys itself; there is no leftover of ours to plant.
            let side = Leftover {
                plant: async |a: &EtcdRecipe, key: &str| plant(&raw, a, key, s).await,
                held: async |key: &str, token: u64| {
                    keys(&raw, key)
                        .await
                        .iter()
                        .any(|(_, r)| *r as u64 == token)
                },
                entries: async |key: &str| keys(&raw, key).await,
            };
            run.run(
                &format!("hold-and-acquire-{s}"),
                Box::pin(sc::hold_and_acquire(&make, s, &side)),
            )
            .await;
        }
        run.run(
            &format!("leader-change-{s}"),
            Box::pin(sc::leader_change(&make, "etcd", s, &cluster)),
        )
        .await;
    }
    // Last: it freezes the whole cluster.
    run.run(
        "lost-when-silent",
        Box::pin(sc::lost_when_silent(
            &make,
            "etcd",
            &cluster,
            async |a: &EtcdRecipe| a.renewed_at().await,
        )),
    )
    .await;
    drop(raw);
    common::teardown_and_assert_gone(cluster).await;
    run.finish();
}

/// Leaves a key of a's lease on lock `key`, as an unanswered create of an earlier attempt
/// would; returns its create revision.
async fn plant(raw: &etcd_client::Client, a: &EtcdRecipe, key: &str, strategy: Strategy) -> u64 {
    let lease = a.lease_id().await.expect("a has a lease");
    let name = match strategy {
        Strategy::Herd => format!("{PREFIX}/{key}"),
        _ => format!("{PREFIX}/{key}/{lease:x}"),
    };
    let r = raw
        .clone()
        .put(
            name,
            "0123456789abcdef",
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("plant a leftover");
    r.header().expect("header").revision() as u64
}
