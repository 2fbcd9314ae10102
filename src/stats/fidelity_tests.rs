//! Requested versus measured pacing, and the FIFO basis, on hand-made histories; every expected
//! number is worked out by hand (kept apart from `tests.rs` so both can grow without clashing).

use std::time::Duration;

use super::analyze_events as analyze;
use super::*;
use crate::history::Event;
use crate::history::TIMEOUT_ERROR;

fn ev(t_us: u64, client: u32, kind: EventKind, op: Op) -> Event {
    Event::new(t_us, client, kind, op, "k")
}
fn inv(t: u64, c: u32, op: Op) -> Event {
    ev(t, c, EventKind::Invoke, op)
}
fn ok(t: u64, c: u32, op: Op) -> Event {
    ev(t, c, EventKind::Ok, op)
}
fn release(t: u64, c: u32, hold_us: u64) -> Event {
    let mut e = inv(t, c, Release);
    e.hold_us = Some(hold_us);
    e
}
fn acquire_after_think(t: u64, c: u32, think_us: u64) -> Event {
    let mut e = inv(t, c, Acquire);
    e.think_us = Some(think_us);
    e
}
fn granted(t: u64, c: u32, position: Option<u64>) -> Event {
    let mut e = ok(t, c, Acquire);
    e.queue_position = position;
    e
}
fn cell(clients: u32) -> CellInfo {
    CellInfo {
        server_version: None,
        server_settings: None,
        id: crate::plan::CellId::new(
            crate::system::System::Redis,
            crate::recipe::Strategy::Predecessor,
            "test",
            clients,
        ),
        warmup: Duration::ZERO,
        end_us: None,
        resource: Default::default(),
        expect: Default::default(),
        settle_ms: None,
        lock: Default::default(),
    }
}
use Op::{Acquire, Release};

#[test]
fn requested_and_measured_hold_and_think() {
    let mut timeout = ev(2900, 0, EventKind::Fail, Acquire);
    timeout.error = Some(TIMEOUT_ERROR.into());
    let h = vec![
        inv(0, 0, Acquire), // the first acquisition follows no think
        ok(100, 0, Acquire),
        release(1150, 0, 1000), // held 1150 − 100 = 1050 for 1000 asked
        ok(1200, 0, Release),
        acquire_after_think(1260, 0, 50), // thought 1260 − 1200 = 60 for 50 asked
        ok(1300, 0, Acquire),
        release(2800, 0, 1400), // held 2800 − 1300 = 1500 for 1400 asked
        ok(2850, 0, Release),
        acquire_after_think(2860, 0, 0), // thought 10 for 0 asked
        timeout,
        acquire_after_think(4920, 0, 2000), // from the timeout: 4920 − 2900 = 2020 for 2000
    ];
    let s = analyze(&h, &cell(1)).summary;
    let (m, r) = (s.hold_time_us, s.hold_requested_us);
    assert_eq!((m.count, m.p50, m.max, m.mean), (2, 1050, 1500, 1275.0));
    assert_eq!((r.count, r.p50, r.max, r.mean), (2, 1000, 1400, 1200.0));
    // Think, sorted: asked 0, 50, 2000 (p50 50); measured 10, 60, 2020 (p50 60).
    let (m, r) = (s.think_time_us, s.think_requested_us);
    assert_eq!((m.count, m.p50, m.max), (3, 60, 2020));
    assert!((m.mean - 2090.0 / 3.0).abs() < 1e-9, "{}", m.mean);
    assert_eq!((r.count, r.p50, r.max), (3, 50, 2000));
    assert!((r.mean - 2050.0 / 3.0).abs() < 1e-9, "{}", r.mean);
    assert_eq!(s.arrival_lag_us.count, 0, "closed loop");
}

#[test]
fn open_loop_arrival_lag_from_the_intended_start() {
    let at = |t: u64, c: u32, intended: u64| {
        let mut e = inv(t, c, Acquire);
        e.intended_us = Some(intended);
        e
    };
    let h = vec![
        at(1010, 3, 900),  // intended before the 1000 µs warm-up: left out
        at(1030, 0, 1000), // 30 late
        at(1990, 2, 2000), // early cannot be negative: 0
        at(2000, 1, 1500), // the client was busy: 500 late
    ];
    let c = CellInfo {
        warmup: Duration::from_micros(1000),
        ..cell(4)
    };
    let s = analyze(&h, &c).summary;
    // Sorted 0, 30, 500.
    let l = s.arrival_lag_us;
    assert_eq!((l.count, l.p50, l.max), (3, 30, 500));
    assert!((l.mean - 530.0 / 3.0).abs() < 1e-9, "{}", l.mean);
    assert_eq!(s.think_time_us.count, 0, "open loop has no think");
}

#[test]
fn holds_and_thinks_of_the_warm_up_are_left_out() {
    let h = vec![
        inv(0, 0, Acquire),
        ok(10, 0, Acquire),
        release(500, 0, 480), // granted in the warm-up
        ok(510, 0, Release),
        acquire_after_think(900, 0, 390), // invoked in the warm-up
        ok(1100, 0, Acquire),
        release(1300, 0, 150), // counted: 200 for 150
        ok(1320, 0, Release),
        acquire_after_think(1400, 0, 70), // counted: 80 for 70
    ];
    let c = CellInfo {
        warmup: Duration::from_micros(1000),
        ..cell(1)
    };
    let s = analyze(&h, &c).summary;
    assert_eq!((s.hold_time_us.count, s.hold_time_us.max), (1, 200));
    assert_eq!(
        (s.hold_requested_us.count, s.hold_requested_us.max),
        (1, 150)
    );
    assert_eq!((s.think_time_us.count, s.think_time_us.max), (1, 80));
    assert_eq!(
        (s.think_requested_us.count, s.think_requested_us.max),
        (1, 70)
    );
}

/// Two clients invoke 3 µs apart; the later one reached the server first, took queue position 1
/// and is granted first. `positions` gives (c1's, c0's) positions.
fn stampede_race(positions: (Option<u64>, Option<u64>)) -> Vec<Event> {
    vec![
        inv(100, 0, Acquire),
        inv(103, 1, Acquire),
        granted(200, 1, positions.0),
        inv(300, 1, Release),
        ok(310, 1, Release),
        granted(400, 0, positions.1),
    ]
}

#[test]
fn a_network_race_is_no_inversion_by_queue_position() {
    let s = analyze(&stampede_race((Some(1), Some(2))), &cell(2)).summary;
    assert_eq!(
        (s.fifo_basis, s.fifo_inversions),
        (FifoBasis::QueuePosition, 0)
    );
    // Without positions the invoke times are all there is: c1 overtook c0.
    let s = analyze(&stampede_race((None, None)), &cell(2)).summary;
    assert_eq!(
        (s.fifo_basis, s.fifo_inversions),
        (FifoBasis::InvokeTime, 1)
    );
    // One grant without a position is enough to fall back to invoke times.
    let s = analyze(&stampede_race((Some(1), None)), &cell(2)).summary;
    assert_eq!(
        (s.fifo_basis, s.fifo_inversions),
        (FifoBasis::InvokeTime, 1)
    );
}

#[test]
fn a_real_overtake_is_an_inversion_by_queue_position() {
    // c0 queued first (position 1) but c1 (position 2) is granted while c0 waits.
    let s = analyze(&stampede_race((Some(2), Some(1))), &cell(2)).summary;
    assert_eq!(
        (s.fifo_basis, s.fifo_inversions),
        (FifoBasis::QueuePosition, 1)
    );
}

#[test]
fn summary_json_names_the_new_fields() {
    let s = analyze(&stampede_race((Some(1), Some(2))), &cell(2)).summary;
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["fifo_basis"], "queue_position");
    for field in [
        "hold_requested_us",
        "think_requested_us",
        "think_time_us",
        "arrival_lag_us",
    ] {
        assert_eq!(v[field]["count"], 0, "{field}");
    }
    // A summary written before these fields existed still reads, with the old basis.
    let mut old = v.clone();
    for field in [
        "fifo_basis",
        "hold_requested_us",
        "think_requested_us",
        "think_time_us",
        "arrival_lag_us",
    ] {
        old.as_object_mut().unwrap().remove(field);
    }
    let back: CellSummary = serde_json::from_value(old).unwrap();
    assert_eq!(back.fifo_basis, FifoBasis::InvokeTime);
    assert_eq!(back.think_time_us, LatencySummary::default());
}
