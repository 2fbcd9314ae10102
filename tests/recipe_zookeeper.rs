//! ZooKeeper lock recipes against a real 3-node ensemble: mutual exclusion, herd vs
//! predecessor wake-ups, FIFO and fencing, crash, stale-release isolation, deadlines, expiry
//! while waiting, a leader change, and a client holding one key while acquiring another. Each
//! scenario is its own test (`cargo test --test recipe_zookeeper crash_herd` runs one); they
//! share one ensemble (distinct keys, one at a time), to keep CI time low (`common::shared`).
//! The scenarios both session-based recipes share live in `common::session_scenarios`.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lockbench::System;
use lockbench::recipe::{RecipeConfig, Strategy};
use lockbench::service::zookeeper::recipe::ZookeeperRecipe;
use zookeeper_client as zk;

use common::session_scenarios::{self as sc, Expect, Expiry, Leftover, PREFIX, config};
use common::shared::Shared;

async fn client(eps: &[String], ttl: Duration) -> ZookeeperRecipe {
    client_with(eps, config(ttl)).await
}

async fn client_with(eps: &[String], cfg: RecipeConfig) -> ZookeeperRecipe {
    ZookeeperRecipe::connect(eps, cfg)
        .await
        .expect("connect to ZooKeeper")
}

async fn raw(eps: &[String]) -> zk::Client {
    zk::Client::connect(&eps.join(","))
        .await
        .expect("raw ZooKeeper client")
}

/// The nodes of lock `key`, as the leader has them: the raw client's server may not yet have
/// applied another client's create or delete (waiter_expiry_herd once read `[]` right after a's
/// grant and `["lock"]` later), so it syncs first. A sync never fails on a missing path.
async fn children(raw: &zk::Client, key: &str) -> Vec<String> {
    raw.sync(PREFIX)
        .await
        .expect("sync the raw client's server with the leader");
    let mut c = raw
        .list_children(&format!("{PREFIX}/{key}"))
        .await
        .unwrap_or_default();
    c.sort();
    c
}

/// Whether a node of lock `key` has czxid `token`. ZooKeeper reads are served by whichever
/// server the raw client is on, and a follower may not yet have applied the create another
/// client's server just committed: `sync` first, so the read sees every write before it.
async fn holds(raw: &zk::Client, key: &str, token: u64) -> bool {
    raw.sync(&format!("{PREFIX}/{key}"))
        .await
        .expect("sync the raw client's server with the leader");
    for c in children(raw, key).await {
        let stat = raw
            .check_stat(&format!("{PREFIX}/{key}/{c}"))
            .await
            .expect("stat");
        if stat.is_some_and(|s| s.czxid as u64 == token) {
            return true;
        }
    }
    false
}

/// Ends a's session the classic way: open it from a second connection and close it.
///
/// A thief reopens a's session and closes it (dropping a client that is not detached closes its
/// session). Once, in CI, a was never told: a's client, cut off by the thief's takeover,
/// reconnected first and took the session back, so the thief's close went nowhere and the
/// session lived on. So the thief comes back until the session cannot be reopened: only then has
/// it ended.
async fn expire(eps: &[String], a: &ZookeeperRecipe) {
    let session = a.session_info().await;
    let give_up = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut last = String::new();
    while tokio::time::Instant::now() < give_up {
        let thief = tokio::time::timeout(
            Duration::from_secs(5),
            zk::Client::connector()
                .with_fail_eagerly()
                .with_session(session.clone())
                .connect(&eps.join(",")),
        )
        .await;
        match thief {
            Ok(Ok(thief)) => drop(thief),
            Ok(Err(zk::Error::SessionExpired)) => return,
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "no answer within 5 s".to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("a's session could still be reopened after 15 s of closing it (last: {last})");
}

/// Requests per acquisition (16 clients × 30, hold 1-5 ms), measured three times with
/// `cargo test --test recipe_zookeeper -- --nocapture`: herd 22.0, 23.4, 24.5 (a create and a
/// getData per wake-up, ~11 wake-ups each), predecessor 4.06 every time (create, getChildren,
/// getData, getChildren again after the wake-up). The bands leave room for noise on 2 cores;
/// a spin loop or a retry storm leaves them.
fn expect(strategy: Strategy) -> Expect {
    match strategy {
        // A herd waiter's poll reads the directory again, watching it with the same read.
        Strategy::Herd => Expect {
            requests: (8.0, 60.0),
            requests_per_poll: 1,
            max_fallback_polls: 480,
        },
        // A predecessor's reads the directory, then watches the node ahead again.
        _ => Expect {
            requests: (3.0, 6.0),
            requests_per_poll: 2,
            max_fallback_polls: 24,
        },
    }
}

/// The 3-node ensemble every test of this file shares, with a raw client for looking at the
/// lock nodes behind the recipes' backs.
static ZOOKEEPER: Shared<zk::Client> = Shared::new(
    System::Zookeeper,
    Some(3),
    Duration::from_secs(180),
    connect_raw,
);

fn connect_raw(eps: Vec<String>) -> Pin<Box<dyn Future<Output = zk::Client> + Send>> {
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
fn crash_herd() {
    crash(Strategy::Herd);
}
#[test]
fn crash_predecessor() {
    crash(Strategy::Predecessor);
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
fn deadline_herd() {
    deadline(Strategy::Herd);
}
#[test]
fn deadline_predecessor() {
    deadline(Strategy::Predecessor);
}
#[test]
fn waiter_ahead_gives_up_predecessor() {
    ZOOKEEPER.run("waiter-ahead-gives-up", |f| async move {
        let make = |cfg| client_with(&f.endpoints, cfg);
        let entries = async |key: &str| children(&f.state, key).await;
        sc::waiter_ahead_gives_up(&make, entries).await;
    });
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

/// Freezes the whole ensemble; the next test's readiness wait covers its recovery.
#[test]
fn lost_when_silent() {
    ZOOKEEPER.run("lost-when-silent", |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let renewed_at = async |_: &ZookeeperRecipe| None;
        sc::lost_when_silent(&make, "zookeeper", &f.cluster, renewed_at).await;
    });
}

fn contention(s: Strategy) {
    ZOOKEEPER.run(&format!("contention-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        sc::contention(&make, "zookeeper", Duration::from_secs(6), s, &expect(s)).await;
    });
}

fn crash(s: Strategy) {
    ZOOKEEPER.run(&format!("crash-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        sc::crash(&make, "zookeeper", s).await;
    });
}

fn isolation(s: Strategy) {
    ZOOKEEPER.run(&format!("isolation-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let eps = &f.endpoints;
        let expiry = Expiry {
            expire: async |a: &ZookeeperRecipe| expire(eps, a).await,
            // The session timeout: the holder must hear before the session could have
            // expired on the leader (see the rule in the recipe's module doc).
            told_within: Duration::from_secs(2),
            regranted_within: Duration::from_secs(10),
            stale_release_may_succeed: true,
            still_held: async |key: &str, token: u64| {
                assert!(
                    holds(&f.state, key, token).await,
                    "b's lock node must survive a's stale release"
                );
            },
        };
        sc::isolation(&make, s, &expiry).await;
    });
}

fn deadline(s: Strategy) {
    ZOOKEEPER.run(&format!("deadline-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let entries = async |key: &str| children(&f.state, key).await;
        sc::deadline(&make, s, Duration::from_secs(6), entries).await;
    });
}

fn waiter_expiry(s: Strategy) {
    ZOOKEEPER.run(&format!("waiter-expiry-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let end_session = async |b: &ZookeeperRecipe| expire(&f.endpoints, b).await;
        let entries = async |key: &str| children(&f.state, key).await;
        sc::waiter_expiry(&make, s, end_session, entries).await;
    });
}

fn hold_and_acquire(s: Strategy) {
    ZOOKEEPER.run(&format!("hold-and-acquire-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        let side = Leftover {
            plant: async |a: &ZookeeperRecipe, key: &str| plant(&f.endpoints, a, key, s).await,
            held: async |key: &str, token: u64| holds(&f.state, key, token).await,
            entries: async |key: &str| children(&f.state, key).await,
        };
        sc::hold_and_acquire(&make, s, &side).await;
    });
}

fn leader_change(s: Strategy) {
    ZOOKEEPER.run(&format!("leader-change-{s}"), |f| async move {
        let make = |ttl| client(&f.endpoints, ttl);
        sc::leader_change(&make, "zookeeper", s, &f.cluster).await;
    });
}

/// Leaves a lock node of a's own session on `key`, as a create whose answer was lost would
/// (made here through a second connection on a's session); returns its czxid.
async fn plant(eps: &[String], a: &ZookeeperRecipe, key: &str, strategy: Strategy) -> u64 {
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
    match raw(eps).await.mkdir(&dir, &persistent).await {
        Ok(()) | Err(zk::Error::NodeExists) => {}
        Err(e) => panic!("mkdir {dir}: {e}"),
    }
    let (path, mode) = match strategy {
        Strategy::Herd => (format!("{dir}/lock"), zk::CreateMode::Ephemeral),
        _ => {
            let tag = format!("{:x}-", session.id().0 as u64);
            (
                format!("{dir}/{tag}lock-"),
                zk::CreateMode::EphemeralSequential,
            )
        }
    };
    // The two connections take the session from each other until the twin is gone: retry.
    let opts = mode.with_acls(zk::Acls::anyone_all());
    let mut made = Err(zk::Error::ConnectionLoss);
    for _ in 0..20 {
        made = twin.create(&path, b"", &opts).await;
        if made.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (stat, _) = made.expect("leftover node");
    drop(twin);
    // Let a's client settle back on its session.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stat.czxid as u64
}
