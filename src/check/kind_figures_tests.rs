//! Each kind of lock's figures land in its summary, and only there: `rwlock` for a read-write
//! lock, `semaphore` for a semaphore, `try_lock` for a workload that does not wait; a mutex
//! cell's summary has none of them.

use std::time::Duration;

use super::testkit::*;
use super::*;
use crate::history::Mode;

/// Two holders of one key from 0 to 3 000 µs: [100, 1 100) and [200, 2 200), woken 1 and 3
/// times.
fn two_holders() -> Vec<Event> {
    let mut g0 = grant(100, 0, "k", 1, 1000);
    g0.wakeups = Some(1);
    let mut g1 = grant(200, 1, "k", 2, 1000);
    g1.wakeups = Some(3);
    vec![
        invoke(0, 0, "k"),
        invoke(0, 1, "k"),
        g0,
        g1,
        release(1_100, 0, "k"),
        release(2_200, 1, "k"),
    ]
}

fn summary_of(events: Vec<Event>, lock: LockKind) -> stats::CellSummary {
    let info = CellInfo {
        lock,
        end_us: Some(3_000),
        ..cell(2)
    };
    evaluate_history(&History::new(events), info)
        .analysis
        .summary
}

#[test]
fn a_semaphore_cell_gets_its_occupancy_and_no_other_kinds_figures() {
    let s = summary_of(two_holders(), LockKind::Semaphore { permits: 2 });
    let f = s.semaphore.as_ref().expect("a semaphore's figures");
    // 1 000 + 2 000 holder-µs over 3 000 µs: 1 holder on average, half of 2 permits.
    assert_eq!((f.permits, f.holders_max), (2, 2));
    assert!((f.utilisation - 0.5).abs() < 1e-12, "{f:?}");
    // (1 + 3) wake-ups for 2 grants, as wakeups_per_acquisition counts them.
    assert_eq!(f.wakeups_per_grant, Some(2.0));
    assert_eq!(f.wakeups_per_grant, s.wakeups_per_acquisition);
    assert!(s.rwlock.is_none() && s.try_lock.is_none());
}

#[test]
fn wake_ups_per_grant_are_absent_where_the_client_cannot_see_them_never_zero() {
    let mut events = two_holders();
    for e in &mut events {
        e.wakeups = None;
    }
    let s = summary_of(events, LockKind::Semaphore { permits: 2 });
    let f = s.semaphore.expect("a semaphore's figures");
    assert_eq!(f.wakeups_per_grant, None);
    let json = serde_json::to_value(&f).unwrap();
    assert!(json.get("wakeups_per_grant").is_none(), "{json}");
}

#[test]
fn a_rwlock_cell_gets_its_readers_and_writers_and_a_mutex_cell_nothing_new() {
    let mut events = two_holders();
    // Client 0 reads, client 1 says no mode: a writer.
    events[0].mode = Some(Mode::Read);
    events[2].mode = Some(Mode::Read);
    let s = summary_of(events.clone(), LockKind::RwLock { read_ratio: 0.5 });
    let f = s.rwlock.as_ref().expect("a read-write lock's figures");
    assert_eq!((f.readers.acquisitions, f.writers.acquisitions), (1, 1));
    // One reader over [100, 1 100): 1 000 reader-µs over 3 000 µs.
    assert!(
        (f.concurrent_readers_mean - 1.0 / 3.0).abs() < 1e-12,
        "{f:?}"
    );
    assert!(s.semaphore.is_none());
    let mutex = summary_of(events, LockKind::Mutex);
    assert!(mutex.rwlock.is_none() && mutex.semaphore.is_none() && mutex.try_lock.is_none());
    let json = serde_json::to_value(&mutex).unwrap();
    for field in ["rwlock", "semaphore", "try_lock", "reentry"] {
        assert!(json.get(field).is_none(), "{field} in a mutex's summary");
    }
}

#[test]
fn a_try_lock_cell_folder_gets_its_success_rate_and_a_waiting_one_none() {
    let dir = std::env::temp_dir().join(format!("lockbench-trylock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Client 0 granted, client 1 refused at once: 1 of 2 attempts.
    let history = [
        invoke(0, 0, "k"),
        grant(10, 0, "k", 1, 1000),
        invoke(20, 1, "k"),
        timeout(20, 1, "k"),
        release(500, 0, "k"),
    ];
    let text: String = history
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join(HISTORY_FILE), text).unwrap();
    let summary_with = |timeout: Option<&str>| {
        let mut file = serde_json::to_value(cell(2)).unwrap();
        if let Some(t) = timeout {
            file["workload_spec"] = serde_json::json!({ "acquire_timeout": t });
        }
        std::fs::write(dir.join(CELL_FILE), file.to_string()).unwrap();
        evaluate(&dir).unwrap().analysis.summary
    };
    let f = summary_with(Some("0s")).try_lock.expect("a tryLock cell");
    assert_eq!((f.attempts, f.granted, f.success_rate), (2, 1, Some(0.5)));
    assert!(summary_with(Some("10s")).try_lock.is_none());
    assert!(summary_with(None).try_lock.is_none());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        crate::results::spec_acquire_timeout(r#"{"workload_spec":{"acquire_timeout":"1s 500ms"}}"#),
        Some(Duration::from_millis(1_500))
    );
}
