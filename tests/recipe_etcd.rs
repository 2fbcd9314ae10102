//! etcd lock recipes against a real 3-member cluster: mutual exclusion, herd vs predecessor
//! (and the server-side Lock) wake-ups, FIFO and fencing, crash, stale-release isolation,
//! deadlines, expiry while waiting, a leader change, and a client holding one key while
//! acquiring another. Each scenario is its own test (`cargo test --test recipe_etcd crash_herd`
//! runs one); they share one cluster (distinct keys, one at a time), to keep CI time low
//! (`common::shared`). The scenarios live in `common::session_scenarios`, shared with ZooKeeper.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use etcd_client::{GetOptions, PutOptions};
use lockbench::System;
use lockbench::recipe::{RecipeConfig, Strategy};
use lockbench::service::etcd::recipe::EtcdRecipe;

use common::session_scenarios::{self as sc, Expect, Expiry, Leftover, PREFIX, config};
use common::shared::Shared;

async fn client(eps: &[String], ttl: Duration) -> EtcdRecipe {
    client_with(eps, config(ttl)).await
}

async fn client_with(eps: &[String], cfg: RecipeConfig) -> EtcdRecipe {
    EtcdRecipe::connect(eps, cfg)
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
        // Every poll reads the queue again, then opens a watch again.
        Strategy::Herd => Expect {
            requests: (6.0, 60.0),
            requests_per_poll: 2,
            max_fallback_polls: 480,
        },
        Strategy::Predecessor => Expect {
            requests: (4.0, 8.0),
            requests_per_poll: 2,
            max_fallback_polls: 24,
        },
        // etcd's own lock call waits on the server: no polls.
        Strategy::Native => Expect {
            requests: (2.0, 2.5),
            requests_per_poll: 0,
            max_fallback_polls: 0,
        },
        other => panic!("etcd offers no {other} strategy"),
    }
}

/// The 3-member cluster every test of this file shares, with a raw client for looking at and
/// ending leases behind the recipes' backs.
static ETCD: Shared<etcd_client::Client> =
    Shared::new(System::Etcd, Some(3), Duration::from_secs(180), connect_raw);

fn connect_raw(eps: Vec<String>) -> Pin<Box<dyn Future<Output = etcd_client::Client> + Send>> {
    Box::pin(async move { raw(&eps).await })
}

#[test]
fn contention_herd() {
    contention(Strategy::Herd);
}
#[test]
fn contention_predecessor() {
    contention(Strategy::Predecessor);
}
#[test]
fn contention_native() {
    contention(Strategy::Native);
}
#[test]
fn crash_herd() {
    crash(Strategy::Herd);
}
#[test]
fn crash_predecessor() {
    crash(Strategy::Predecessor);
}
#[test]
fn crash_native() {
    crash(Strategy::Native);
}
#[test]
fn isolation_herd() {
    isolation(Strategy::Herd);
}
#[test]
fn isolation_predecessor() {
    isolation(Strategy::Predecessor);
}
#[test]
fn isolation_native() {
    isolation(Strategy::Native);
}
#[test]
fn deadline_herd() {
    deadline(Strategy::Herd);
}
#[test]
fn deadline_predecessor() {
    deadline(Strategy::Predecessor);
}
#[test]
fn waiter_ahead_gives_up_predecessor() {
    ETCD.run("waiter-ahead-gives-up", |f| async move {
        let make = |cfg| client_with(&f.endpoints, cfg);
        let entries = async |key: &str| keys(&f.state, key).await;
        sc::waiter_ahead_gives_up(&make, entries).await;
    });
}
#[test]
fn deadline_native() {
    deadline(Strategy::Native);
}
#[test]
fn waiter_expiry_herd() {
    waiter_expiry(Strategy::Herd);
}
#[test]
fn waiter_expiry_predecessor() {
    waiter_expiry(Strategy::Predecessor);
}
#[test]
fn waiter_expiry_native() {
    waiter_expiry(Strategy::Native);
}
// No native variant: the server writes native keys itself; there is no leftover of ours to
// plant.
#[test]
fn hold_and_acquire_herd() {
    hold_and_acquire(Strategy::Herd);
}
#[test]
fn hold_and_acquire_predecessor() {
    hold_and_acquire(Strategy::Predecessor);
}
#[test]
fn leader_change_herd() {
    leader_change(Strategy::Herd);
}
#[test]
fn leader_change_predecessor() {
    leader_change(Strategy::Predecessor);
}
#[test]
fn leader_change_native() {
    leader_change(Strategy::Native);
}

/// A predecessor waiter whose own queue key vanished while it waited (its lease expired on the
/// server, etcd issue 11456) is told it lost when its predecessor goes, not granted: after the
/// wake-up it reads the queue and its own key in one transaction.
#[test]
fn a_waiter_whose_key_vanished_is_lost_when_its_turn_comes() {
    ETCD.run("vanished-waiter", |f| async move {
        use lockbench::recipe::{LockError, Recipe};
        let key = "vanished-waiter";
        let ttl = Duration::from_secs(5);
        let (a, b) = (
            client(&f.endpoints, ttl).await,
            client(&f.endpoints, ttl).await,
        );
        let strategy = Strategy::Predecessor;
        let deadline = || std::time::Instant::now() + Duration::from_secs(8);
        let held = a
            .acquire(key, strategy, deadline())
            .await
            .expect("a acquires");
        let only_a = keys(&f.state, key).await;
        let waiter = tokio::spawn(async move {
            let got = b.acquire(key, strategy, deadline()).await;
            (got, b)
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        let queued: Vec<_> = keys(&f.state, key)
            .await
            .into_iter()
            .filter(|k| !only_a.contains(k))
            .collect();
        assert_eq!(queued.len(), 1, "b's place in the queue: {queued:?}");
        let mut raw = f.state.clone();
        raw.delete(queued[0].0.as_str(), None)
            .await
            .expect("delete b's key");
        let released_at = std::time::Instant::now();
        a.release(held).await.expect("a releases");
        let (got, b) = waiter.await.expect("waiter task");
        assert!(
            matches!(got, Err(LockError::Lost { .. })),
            "b must learn it lost its place, not be granted: {got:?}"
        );
        assert!(
            released_at.elapsed() < Duration::from_secs(3),
            "b was told only at its deadline"
        );
        a.crash().await;
        b.crash().await;
    });
}

/// A client that ends cleanly (`close`, at a cell's end) gives its lease back: the server
/// no longer knows it, so a put under it that the cluster commits late (an attempt given up
/// on during a partition) is refused instead of leaving a key for the lease's TTL, where a
/// crashed client's lease lives on.
#[test]
fn a_closed_client_leaves_no_lease_a_late_put_could_use() {
    ETCD.run("closed-client", |f| async move {
        use lockbench::recipe::Recipe;
        let key = "closed-client";
        let ttl = Duration::from_secs(10);
        let deadline = || std::time::Instant::now() + Duration::from_secs(8);
        let (closed, crashed) = (
            client(&f.endpoints, ttl).await,
            client(&f.endpoints, ttl).await,
        );
        for c in [&closed, &crashed] {
            let held = c
                .acquire(key, Strategy::Predecessor, deadline())
                .await
                .expect("acquires");
            c.release(held).await.expect("releases");
        }
        let closed_id = closed.lease_id().await.expect("a lease");
        let crashed_id = crashed.lease_id().await.expect("a lease");
        closed.close().await;
        crashed.crash().await;
        let mut raw = f.state.clone();
        let left = |id| {
            let mut raw = raw.clone();
            async move {
                raw.lease_time_to_live(id, None)
                    .await
                    .expect("lease time-to-live")
                    .ttl()
            }
        };
        // etcd answers -1 for a lease it does not know.
        assert_eq!(
            left(closed_id).await,
            -1,
            "the closed client's lease is revoked"
        );
        assert!(
            left(crashed_id).await > 0,
            "a crashed client's lease lives on"
        );
        let late = raw
            .put(
                format!("{PREFIX}/{key}/late"),
                "x",
                Some(PutOptions::new().with_lease(closed_id)),
            )
            .await;
        assert!(
            late.is_err(),
            "a put under a revoked lease is refused: {late:?}"
        );
        assert!(
            keys(&f.state, key).await.is_empty(),
            "nothing of the closed client is left under the lock"
        );
        raw.lease_revoke(crashed_id)
            .await
            .expect("revoke the crashed lease");
    });
}

/// Freezes the whole cluster; the next test's readiness wait covers its recovery.
#[test]
fn lost_when_silent() {
    ETCD.run("lost-when-silent", |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let renewed_at = async |a: &EtcdRecipe| a.renewed_at().await;
        sc::lost_when_silent(&make, "etcd", &f.cluster, renewed_at).await;
    });
}

fn contention(s: Strategy) {
    ETCD.run(&format!("contention-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        sc::contention(&make, "etcd", Duration::from_secs(10), s, &expect(s)).await;
    });
}

fn crash(s: Strategy) {
    ETCD.run(&format!("crash-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        sc::crash(&make, "etcd", s).await;
    });
}

fn isolation(s: Strategy) {
    ETCD.run(&format!("isolation-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let raw = &f.state;
        let expiry = Expiry {
            expire: async |a: &EtcdRecipe| revoke(raw, a).await,
            told_within: Duration::from_secs(5),
            regranted_within: Duration::from_secs(5),
            stale_release_may_succeed: false,
            still_held: async |key: &str, token: u64| {
                let left = keys(raw, key).await;
                assert!(
                    left.iter().any(|(_, rev)| *rev as u64 == token),
                    "b's lock key must survive a's stale release: {left:?}"
                );
            },
        };
        sc::isolation(&make, s, &expiry).await;
    });
}

fn deadline(s: Strategy) {
    ETCD.run(&format!("deadline-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let entries = async |key: &str| keys(&f.state, key).await;
        sc::deadline(&make, s, Duration::from_secs(10), entries).await;
    });
}

fn waiter_expiry(s: Strategy) {
    ETCD.run(&format!("waiter-expiry-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let expire = async |b: &EtcdRecipe| revoke(&f.state, b).await;
        let entries = async |key: &str| keys(&f.state, key).await;
        sc::waiter_expiry(&make, s, expire, entries).await;
    });
}

fn hold_and_acquire(s: Strategy) {
    ETCD.run(&format!("hold-and-acquire-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let raw = &f.state;
        let side = Leftover {
            plant: async |a: &EtcdRecipe, key: &str| plant(raw, a, key, s).await,
            held: async |key: &str, token: u64| {
                keys(raw, key).await.iter().any(|(_, r)| *r as u64 == token)
            },
            entries: async |key: &str| keys(raw, key).await,
        };
        sc::hold_and_acquire(&make, s, &side).await;
    });
}

fn leader_change(s: Strategy) {
    ETCD.run(&format!("leader-change-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        sc::leader_change(&make, "etcd", s, &f.cluster).await;
    });
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
