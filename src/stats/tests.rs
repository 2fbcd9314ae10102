//! Statistics on hand-made histories, where every expected number can be worked out by hand.

use std::collections::BTreeMap;
use std::time::Duration;

use super::analyze_events as analyze;
use super::*;
use crate::history::Event;
use crate::history::{ErrorKind, TIMEOUT_ERROR};

fn ev(t_us: u64, client: u32, kind: EventKind, op: Op, key: &str) -> Event {
    Event::new(t_us, client, kind, op, key)
}
fn inv(t: u64, c: u32, op: Op) -> Event {
    ev(t, c, EventKind::Invoke, op, "k")
}
fn ok(t: u64, c: u32, op: Op) -> Event {
    ev(t, c, EventKind::Ok, op, "k")
}
fn failed(t: u64, c: u32, kind: EventKind, msg: &str) -> Event {
    let mut e = ev(t, c, kind, Op::Acquire, "k");
    e.error = Some(msg.to_string());
    e
}
use crate::results::testkit::cell;
use Op::{Acquire, Release};

/// HdrHistogram reports a value at the top of its bucket: within 0.1% at 3 significant digits.
pub(super) fn assert_near(got: u64, want: u64) {
    let tol = (want as f64 * 0.001).max(1.0);
    assert!(
        (got as f64 - want as f64).abs() <= tol,
        "{got} is not within 0.1% of {want}"
    );
}

/// c0 takes the lock, c1 queues, c0 hands over to c1.
fn two_client_handoff() -> Vec<Event> {
    let mut a0 = ok(100, 0, Acquire);
    (a0.wakeups, a0.requests) = (Some(0), Some(1));
    let mut a1 = ok(1400, 1, Acquire);
    (a1.wakeups, a1.requests) = (Some(1), Some(3));
    vec![
        inv(0, 0, Acquire),
        a0,
        inv(200, 1, Acquire),
        inv(1100, 0, Release),
        ok(1150, 0, Release),
        a1,
        inv(2400, 1, Release),
        ok(2500, 1, Release),
    ]
}

#[test]
fn handoff_hold_release_and_herd_on_two_clients() {
    let s = analyze(&two_client_handoff(), &cell(2)).summary;
    assert_eq!(s.acquisitions, 2);
    assert_eq!(
        (s.handoff_latency_us.count, s.handoff_latency_us.max),
        (1, 300)
    );
    assert_eq!(
        (s.hold_time_us.count, s.hold_time_us.p50, s.hold_time_us.max),
        (2, 1000, 1000)
    );
    assert_eq!(
        (s.acquire_latency_us.p50, s.acquire_latency_us.max),
        (100, 1200)
    );
    assert_eq!(
        (s.release_latency_us.p50, s.release_latency_us.max),
        (50, 100)
    );
    assert_eq!(s.wakeups_per_acquisition, Some(0.5));
    assert_eq!(s.requests_per_acquisition, Some(2.0));
    assert_eq!(s.max_wait_us, 1200);
    assert_eq!(s.jain_fairness, Some(1.0));
    assert_eq!((s.fifo_inversions, s.unfinished, s.unmatched), (0, 0, 0));
    assert_eq!(s.duration_s, 0.0025);
    assert_eq!(s.throughput_per_s, 800.0);
}

#[test]
fn failed_attempts_count_their_wakeups_requests_and_polls() {
    // c0 holds; c1 waits, is woken 7 times in 12 requests with 2 fallback polls and times out;
    // c2 waits too (3 wake-ups, 5 requests) and is granted. Per granted acquisition (2): wake-ups
    // (0 + 7 + 3) / 2 = 5, requests (1 + 12 + 5) / 2 = 9; the totals keep the raw sums.
    let counted = |mut e: Event, w: u64, r: u64, p: u64| {
        (e.wakeups, e.requests, e.fallback_polls) = (Some(w), Some(r), Some(p));
        e
    };
    let h = vec![
        inv(0, 0, Acquire),
        counted(ok(100, 0, Acquire), 0, 1, 0),
        inv(200, 1, Acquire),
        inv(300, 2, Acquire),
        counted(failed(5200, 1, EventKind::Fail, TIMEOUT_ERROR), 7, 12, 2),
        inv(5300, 0, Release),
        ok(5400, 0, Release),
        counted(ok(5500, 2, Acquire), 3, 5, 0),
    ];
    let s = analyze(&h, &cell(3)).summary;
    assert_eq!(s.acquisitions, 2);
    assert_eq!(s.timeouts, 1);
    assert_eq!(s.wakeups_per_acquisition, Some(5.0));
    assert_eq!(s.requests_per_acquisition, Some(9.0));
    assert_eq!(s.wakeups_total, Some(10));
    assert_eq!(s.requests_total, 18);
    assert_eq!(s.fallback_polls, 2);
}

#[test]
fn invisible_wakeups_are_absent_not_zero() {
    // etcd's server-side Lock: outcomes carry requests but no wake-up count.
    let mut a = ok(100, 0, Acquire);
    (a.requests, a.fallback_polls) = (Some(2), Some(0));
    let s = analyze(&[inv(0, 0, Acquire), a], &cell(1)).summary;
    assert_eq!(s.wakeups_per_acquisition, None);
    assert_eq!(s.wakeups_total, None);
    assert_eq!(s.requests_per_acquisition, Some(2.0));
}

#[test]
fn an_idle_lock_is_not_a_handoff() {
    // c1 asks only after c0 has released: nobody was waiting, so no handoff is measured.
    let h = vec![
        inv(0, 0, Acquire),
        ok(10, 0, Acquire),
        inv(20, 0, Release),
        ok(30, 0, Release),
        inv(500, 1, Acquire),
        ok(510, 1, Acquire),
    ];
    assert_eq!(analyze(&h, &cell(2)).summary.handoff_latency_us.count, 0);
}

#[test]
fn a_three_second_outage_shows_three_zero_seconds() {
    let h = vec![
        inv(100_000, 0, Acquire),
        ok(200_000, 0, Acquire),
        inv(300_000, 0, Release),
        ok(400_000, 0, Release),
        inv(500_000, 0, Acquire),
        ok(4_200_000, 0, Acquire),
    ];
    let s = analyze(&h, &cell(1)).summary;
    let counts: Vec<u64> = s.per_second.iter().map(|x| x.acquisitions).collect();
    assert_eq!(counts, [1, 0, 0, 0, 1]);
    assert_near(s.per_second[4].p50_acquire_us, 3_700_000);
    assert_eq!(s.max_wait_us, 3_700_000);
}

#[test]
fn fifo_inversion_counted_when_a_later_waiter_wins() {
    let base = |first: u32, second: u32| {
        vec![
            inv(0, 0, Acquire),
            ok(5, 0, Acquire),
            inv(10, 1, Acquire),
            inv(20, 2, Acquire),
            inv(100, 0, Release),
            ok(110, 0, Release),
            ok(120, first, Acquire),
            inv(200, first, Release),
            ok(210, first, Release),
            ok(220, second, Acquire),
        ]
    };
    assert_eq!(analyze(&base(2, 1), &cell(3)).summary.fifo_inversions, 1);
    assert_eq!(analyze(&base(1, 2), &cell(3)).summary.fifo_inversions, 0);
}

#[test]
fn inversions_only_on_the_same_key() {
    let mut h = vec![inv(0, 0, Acquire), inv(10, 1, Acquire)];
    h[0].key = "a".into();
    h.push(ok(20, 1, Acquire)); // key "k": client 0 waits on "a", so nobody was overtaken
    assert_eq!(analyze(&h, &cell(2)).summary.fifo_inversions, 0);
}

#[test]
fn jain_index_for_one_client_taking_all() {
    let h = vec![
        inv(0, 0, Acquire),
        ok(1, 0, Acquire),
        inv(2, 0, Release),
        ok(3, 0, Release),
        inv(4, 0, Acquire),
        ok(5, 0, Acquire),
    ];
    let j = analyze(&h, &cell(4)).summary.jain_fairness.unwrap();
    assert!((j - 0.25).abs() < 1e-12, "{j}");
}

#[test]
fn errors_grouped_timeouts_and_unknowns_counted() {
    let h = vec![
        inv(0, 0, Acquire),
        failed(10, 0, EventKind::Fail, "server error: too many requests"),
        inv(20, 0, Acquire),
        failed(30, 0, EventKind::Fail, "server error: too many requests"),
        inv(40, 1, Acquire),
        failed(50, 1, EventKind::Info, "connection problem: reset"),
        inv(60, 2, Acquire),
        failed(70, 2, EventKind::Fail, TIMEOUT_ERROR),
        inv(80, 2, Acquire),
        failed(90, 2, EventKind::Fail, TIMEOUT_ERROR),
        ev(95, 3, EventKind::Info, Op::LeaseLost, "k"),
        inv(99, 3, Acquire),
    ];
    let kinded = |mut e: Event, k: ErrorKind| {
        e.error_kind = Some(k);
        e
    };
    let mut h = h;
    h[1] = kinded(h[1].clone(), ErrorKind::Server);
    h[5] = kinded(h[5].clone(), ErrorKind::Connection);
    h[7] = kinded(h[7].clone(), ErrorKind::Timeout);
    // h[3] has no kind, as a history written before kinds existed: "unclassified"; h[9] a
    // timeout known by its text alone.
    let s = analyze(&h, &cell(4)).summary;
    let by_kind: BTreeMap<String, u64> = [
        ("server".to_string(), 1),
        ("unclassified".to_string(), 1),
        ("connection".to_string(), 1),
    ]
    .into();
    assert_eq!(s.errors, by_kind);
    let by_text: BTreeMap<String, u64> = [
        ("server error: too many requests".to_string(), 2),
        ("connection problem: reset".to_string(), 1),
    ]
    .into();
    assert_eq!(s.error_messages, by_text);
    assert_eq!((s.timeouts, s.indeterminate, s.lost_leases), (2, 1, 1));
    assert_eq!((s.acquisitions, s.unfinished), (0, 1));
    assert_eq!(s.jain_fairness, None);
    assert_eq!(s.per_second[0].failures, 5);
}

#[test]
fn open_loop_latency_counts_from_the_intended_start() {
    let mut i = inv(5_000, 0, Acquire);
    i.intended_us = Some(1_000);
    let s = analyze(&[i, ok(6_000, 0, Acquire)], &cell(1)).summary;
    assert_near(s.acquire_latency_us.max, 5_000); // not the 1 000 µs since the invoke
}

#[test]
fn warmup_excludes_earlier_operations() {
    let mut h = Vec::new();
    for (i, t) in [100_000u64, 600_000, 1_200_000, 1_700_000]
        .into_iter()
        .enumerate()
    {
        let c = i as u32;
        h.extend([
            inv(t, c, Acquire),
            ok(t + 50, c, Acquire),
            inv(t + 100, c, Release),
            ok(t + 120, c, Release),
        ]);
    }
    // An outcome with no invoke is damage, counted as unmatched rather than as an error.
    h.push(failed(500_000, 9, EventKind::Fail, "early"));
    let c = CellInfo {
        warmup: Duration::from_secs(1),
        end_us: Some(3_000_000),
        resource: Default::default(),
        expect: Default::default(),
        ..cell(4)
    };
    let s = analyze(&h, &c).summary;
    assert_eq!(s.acquisitions, 2);
    assert_eq!(s.hold_time_us.count, 2);
    assert_eq!(s.release_latency_us.count, 2);
    assert!(s.errors.is_empty());
    assert_eq!(s.unmatched, 1);
    assert_eq!(s.duration_s, 2.0);
    assert_eq!(s.throughput_per_s, 1.0);
    assert_eq!(
        s.per_second
            .iter()
            .map(|x| (x.second, x.acquisitions))
            .collect::<Vec<_>>(),
        [(1, 2), (2, 0)]
    );
    // Clients 0 and 1 only acquired during warm-up: the measured shares are [0, 0, 1, 1].
    assert!((s.jain_fairness.unwrap() - 0.5).abs() < 1e-12);
}

#[test]
fn summary_json_has_the_documented_fields() {
    let a = analyze(&two_client_handoff(), &cell(2));
    let v = serde_json::to_value(&a.summary).unwrap();
    assert_eq!(v["schema_version"], SCHEMA_VERSION);
    assert_eq!(v["system"], "etcd");
    assert_eq!(v["strategy"], "predecessor");
    assert_eq!(v["handoff_latency_us"]["p50"], 300);
    for field in ["p50", "p90", "p99", "p999", "max", "mean"] {
        assert!(v["acquire_latency_us"].get(field).is_some(), "{field}");
    }
    assert_eq!(v["per_second"][0]["acquisitions"], 2);
    let back: CellSummary = serde_json::from_value(v).unwrap();
    assert_eq!(back, a.summary);
    assert_eq!(a.acquire.len(), 2);
}
