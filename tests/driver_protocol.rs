//! The driver protocol against a tiny scripted driver (tests/data/scripted_driver.py, no
//! Docker): a normal round, and a driver that prints a malformed line, hangs, crashes or
//! answers out of order, each ending the client's operation as unknown (`info`), never as a
//! hang, with a message naming the driver and the line.

mod mock_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockbench::cluster::ConnectInfo;
use lockbench::driver::protocol::{Hello, PROTOCOL};
use lockbench::driver::{Deadlines, DriverClient, DriverProcess};
use lockbench::recipe::{LockError, Recipe, Strategy};
use lockbench::resource::AccessOp;
use lockbench::results::SafetyVerdict;
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
    let c = |i| DriverClient::new(p.clone(), i, System::Redis, ttl, true, DEADLINES, "");
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

const WORKLOAD: &str = r#"
clients = 4
keys = 2
hold = { kind = "fixed", value = "1ms" }
think = { kind = "fixed", value = "1ms" }
arrival = "closed"
duration = "1s"
warmup = "0s"
lease_ttl = "10s"
acquire_timeout = "1s"
strategies = ["herd"]
seed = 7
"#;

/// Plays the workload above on the in-memory mock with the recipe and the library of the
/// manifest `name` (tests/data): the run's summaries and folder.
async fn run_with_library(name: &str) -> lockbench::runner::RunOutcome {
    use lockbench::driver::Manifest;
    use lockbench::plan::{ClientLibrary, Overrides, Plan};
    use lockbench::recipe::mock::MockOptions;
    use lockbench::workload::Workload;

    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let m = Manifest::load(&path).unwrap();
    let ov = Overrides {
        libraries: vec![ClientLibrary {
            name: m.library.clone(),
            manifest: m.path.clone(),
            systems: m.systems.clone(),
            tokens: m.tokens,
        }],
        ..Overrides::default()
    };
    let wl = Workload::from_str(WORKLOAD, "w").unwrap();
    let plan = Plan::expand("drv", &[System::Redis], &[wl], &ov).unwrap();
    let out = std::env::temp_dir().join(format!(
        "lockbench-drv-{}-{}",
        m.library,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    mock_support::play(MockOptions::default(), plan, &out, "w").await
}

/// `--clients-from`: the library's cells run beside the recipes', named by the library, through
/// the whole runner on the in-memory mock (the scripted driver keeps its own lock); the cell's
/// folder has the driver's record (its pipe's round trip) and its stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_is_a_cell_coordinate_run_beside_the_recipes() {
    let outcome = run_with_library("scripted-driver.toml").await;
    let ids: Vec<String> = outcome.summaries.iter().map(|s| s.id.to_string()).collect();
    assert_eq!(ids, ["redis-herd-w-c4", "redis-scripted-w-c4"]);
    let lib = &outcome.summaries[1];
    assert_eq!(lib.id.library.as_deref(), Some("scripted"));
    assert!(lib.acquisitions > 0, "the driver's clients acquired");
    assert_eq!(lib.indeterminate, 0, "every request was answered");
    let safety = lib.safety.as_ref().expect("a verdict");
    assert_eq!(safety.verdict, SafetyVerdict::Safe, "{safety:?}");
    let cell = outcome.folder.join("cells/redis-scripted-w-c4");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cell.join("driver.json")).unwrap()).unwrap();
    assert_eq!(record["library"], "scripted");
    assert_eq!(record["reported_version"], "scripted-1");
    assert_eq!(record["processes"], 1);
    assert!(
        record["round_trip_p50_us"].as_u64().unwrap() > 0,
        "{record}"
    );
    assert!(record["broken"].as_array().unwrap().is_empty(), "{record}");
    let stderr = std::fs::read_to_string(cell.join("driver-0.stderr")).unwrap();
    assert!(stderr.contains("acquire"), "{stderr}");
}

/// A lock that is not shared is no lock: two driver processes with a lock table each grant one
/// key twice, and the checkers say so from the history alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_whose_processes_do_not_share_the_lock_is_judged_unsafe() {
    let outcome = run_with_library("scripted-driver-split.toml").await;
    let lib = &outcome.summaries[1];
    assert_eq!(lib.id.to_string(), "redis-scripted-split-w-c4");
    let safety = lib.safety.as_ref().expect("a verdict");
    assert_eq!(safety.verdict, SafetyVerdict::Unsafe, "{safety:?}");
    assert!(safety.overlaps.granted_twice > 0, "{safety:?}");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            outcome
                .folder
                .join("cells/redis-scripted-split-w-c4/driver.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(record["processes"], 2, "4 clients, 2 a process");
}
