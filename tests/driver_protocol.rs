//! The driver protocol against a tiny scripted driver (tests/data/scripted_driver.py, no
//! Docker): a normal round, and a driver that prints a malformed line, hangs, crashes or
//! answers out of order, each ending the client's operation as unknown (`info`), never as a
//! hang, with a message naming the driver and the line.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockbench::cluster::ConnectInfo;
use lockbench::driver::protocol::{Hello, PROTOCOL};
use lockbench::driver::{Deadlines, DriverClient, DriverProcess};
use lockbench::recipe::{LockError, Recipe, Strategy};
use lockbench::resource::AccessOp;
use lockbench::system::System;

const DEADLINES: Deadlines = Deadlines {
    answer_grace: Duration::from_millis(300),
    access: Duration::from_millis(500),
};

/// Starts the scripted driver in `mode`, says hello (with 5 pings), and gives its client 0
/// and 1; the driver's stderr goes to a file of the test's own.
async fn start(mode: &str) -> (Arc<DriverProcess>, DriverClient, DriverClient, PathBuf) {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let stderr = std::env::temp_dir().join(format!(
        "lockbench-driver-{}-{mode}.stderr",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&stderr);
    let command = vec![
        "python3".to_string(),
        "scripted_driver.py".to_string(),
        mode.to_string(),
    ];
    let p = Arc::new(DriverProcess::spawn("scripted", &command, &data, &stderr).unwrap());
    let hello = Hello {
        protocol: PROTOCOL,
        system: System::Redis,
        library: "scripted".into(),
        cluster: ConnectInfo {
            system: System::Redis,
            endpoints: vec!["127.0.0.1:1".into()],
            sentinel_endpoints: vec![],
            address_map: Default::default(),
            master_name: None,
        },
        lease_ttl_ms: 2000,
        clients: 2,
        prefix: "/t".into(),
        settings: Default::default(),
    };
    let version = p
        .hello(hello, Instant::now() + Duration::from_secs(10), 5)
        .await
        .expect("the scripted driver says hello");
    assert_eq!(version.as_deref(), Some("scripted-1"));
    let ttl = Duration::from_secs(2);
    let c = |i| DriverClient::new(p.clone(), i, System::Redis, ttl, true, DEADLINES);
    (p.clone(), c(0), c(1), stderr)
}

fn soon() -> Instant {
    Instant::now() + Duration::from_millis(200)
}

#[tokio::test]
async fn a_normal_round_acquires_accesses_and_releases_with_the_drivers_token() {
    let (p, a, b, stderr) = start("normal").await;
    let lease = a.acquire("/t/k0", Strategy::Herd, soon()).await.unwrap();
    assert_eq!(lease.token, 1);
    assert_eq!(lease.requests, 1);
    assert_eq!(
        lease.wakeups, None,
        "a figure the driver did not give is absent"
    );
    // The other client is refused: held.
    let e = b
        .acquire("/t/k0", Strategy::Herd, soon())
        .await
        .unwrap_err();
    assert!(matches!(e, LockError::Timeout { .. }), "{e}");
    a.before_access(&lease, AccessOp::Read).await.unwrap();
    a.before_access(&lease, AccessOp::Write).await.unwrap();
    a.release(lease).await.unwrap();
    let again = b.acquire("/t/k0", Strategy::Herd, soon()).await.unwrap();
    assert_eq!(again.token, 2, "tokens grow with each grant");
    // Five pings and two accesses, each a measured round trip.
    let rtts = p.round_trips_us();
    assert_eq!(rtts.len(), 7, "{rtts:?}");
    assert!(rtts.iter().all(|&us| us > 0), "{rtts:?}");
    let log = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        log.contains("\"op\": \"acquire\"") || log.contains("\"op\":\"acquire\""),
        "{log}"
    );
    assert!(p.broken().is_none());
}

#[tokio::test]
async fn lease_lost_fires_the_signal_and_the_driver_declines_the_write() {
    let (_p, a, _b, _) = start("lost").await;
    let mut lease = a.acquire("/t/k0", Strategy::Herd, soon()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), lease.lost.wait())
        .await
        .expect("lease_lost reaches the lease's signal");
    let e = a.before_access(&lease, AccessOp::Write).await.unwrap_err();
    assert!(matches!(e, LockError::Lost { .. }), "{e}");
    a.release(lease).await.unwrap();
}

/// Acquires with client 0 from a driver in `mode`: the outcome is unknown, the error names the
/// driver and contains `line`; a second client's next acquisition is unknown too, and nothing
/// hangs.
async fn misbehaves(mode: &str, line: &str) {
    let (p, a, b, _) = start(mode).await;
    let started = Instant::now();
    let e = a
        .acquire("/t/k0", Strategy::Herd, soon())
        .await
        .unwrap_err();
    assert!(e.is_indeterminate(), "{mode}: {e}");
    let text = e.to_string();
    assert!(text.contains("driver scripted"), "{mode}: {text}");
    assert!(text.contains(line), "{mode}: {text}");
    let e2 = b
        .acquire("/t/k1", Strategy::Herd, soon())
        .await
        .unwrap_err();
    assert!(e2.is_indeterminate(), "{mode}: {e2}");
    // Bounded by the deadlines (200 ms each plus 300 ms of grace), with room for a slow CI.
    assert!(started.elapsed() < Duration::from_secs(10), "{mode}");
    if mode != "hang" {
        assert!(p.broken().is_some(), "{mode}");
    }
    p.finish(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_malformed_line_ends_the_operation_unknown_naming_the_line() {
    misbehaves("malformed", "malformed line `this is not json`").await;
}

#[tokio::test]
async fn a_hang_past_the_deadline_ends_the_operation_unknown() {
    misbehaves("hang", "no answer to `{\"id\":6,\"op\":\"acquire\"").await;
}

#[tokio::test]
async fn a_crash_ends_the_operation_unknown() {
    misbehaves("crash", "exited").await;
}

#[tokio::test]
async fn an_answer_nobody_awaits_ends_the_operation_unknown() {
    misbehaves("out-of-order", "answered out of order: `{\"id\": 1006").await;
}
