//! Availability on hand-made histories: windows, the first acquisition, stuck locks.

use super::*;
use crate::check::testkit::*;
use crate::history::Event;

#[test]
fn the_longest_window_and_the_first_acquisition() {
    let h = vec![
        invoke(100, 0, "k"), // window k [100, 300]: 200
        grant(300, 0, "k", 1, 1000),
        invoke(400, 1, "k"), // window k [400, 1000]: 600, the longest
        invoke(500, 2, "j"), // window j [500, 800]: 300
        timeout(800, 2, "j"),
        release(900, 0, "k"),
        grant(1000, 1, "k", 2, 1000),
        release(1100, 1, "k"),
    ];
    let v = run(&Availability, h);
    assert_eq!(v.validity, SafetyVerdict::Safe);
    assert_eq!(count(&v, MAX_UNAVAILABLE_US), 600);
    assert_eq!(v.counts.get(FIRST_ACQUISITION_US), Some(200));
    assert_eq!(
        (count(&v, LONGEST_LEASE_MS), count(&v, STUCK_LOCKS)),
        (1000, 0)
    );
    let e = &v.evidence[0];
    assert_eq!(
        (e.validity, e.class.as_deref()),
        (SafetyVerdict::Safe, Some(LONGEST_WINDOW))
    );
    // Opened by client 1's invoke (line 3), closed by its grant (line 7).
    assert_eq!((&e.t_us[..], &e.lines[..]), (&[400, 1000][..], &[3, 7][..]));
    assert!(
        e.what.contains("waited 0.600 ms") && e.what.contains("client 1 was granted it (token 2)"),
        "{}",
        e.what
    );
}

#[test]
fn nothing_granted_has_no_first_acquisition() {
    let v = run(
        &Availability,
        vec![invoke(0, 0, "k"), timeout(5000, 0, "k")],
    );
    assert_eq!(v.counts.get(FIRST_ACQUISITION_US), None);
    assert_eq!(count(&v, MAX_UNAVAILABLE_US), 5000);
    // No lease TTL known: never stuck, however long.
    assert_eq!(
        (v.validity, count(&v, STUCK_LOCKS)),
        (SafetyVerdict::Safe, 0)
    );
    // A TTL of 0 is an unreported one, not a known lease.
    let h = vec![
        invoke(0, 0, "k"),
        grant(1, 0, "k", 1, 0),
        release(2, 0, "k"),
        invoke(3, 1, "k"),
        timeout(9000, 1, "k"),
    ];
    let v = run(&Availability, h);
    assert_eq!(
        (v.counts.get(LONGEST_LEASE_MS), count(&v, STUCK_LOCKS)),
        (None, 0)
    );
}

/// Client 0 holds k (ttl 1 ms) from 10 to `release_at`; client 2's acquisition at 150 ends
/// unknown at 160; client 1 waits in vain from 200 to 2000 and from 2100 to 4000.
fn abandoned_lock(release_at: u64) -> Vec<Event> {
    vec![
        invoke(0, 0, "k"),           // line 1
        grant(10, 0, "k", 1, 1),     // line 2
        release(release_at, 0, "k"), // line 3
        invoke(150, 2, "k"),         // line 4
        info(160, 2, "k"),           // line 5
        invoke(200, 1, "k"),         // line 6
        timeout(2000, 1, "k"),       // line 7
        invoke(2100, 1, "k"),        // line 8
        timeout(4000, 1, "k"),       // line 9
    ]
}

#[test]
fn a_lock_nobody_holds_that_keeps_refusing_past_two_leases_is_stuck() {
    // Free from 100; the unknown acquisition [150, 160] may have been granted a fresh lease
    // as late as 160, so the stretch is judged after it: client 1 waited in vain from 200 to
    // 4000 = 3800 µs > 2 × 1 ms.
    let v = run(&Availability, abandoned_lock(100));
    assert_eq!(
        (v.validity, count(&v, STUCK_LOCKS)),
        (SafetyVerdict::Unsafe, 1)
    );
    let e = &v.evidence[0];
    assert_eq!(
        (e.class.as_deref(), &e.t_us[..]),
        (Some(STUCK_LOCKS), &[200, 4000][..])
    );
    // The last holder (grant, release), the unknown acquisition, the first and last waits.
    assert_eq!(e.lines, [2, 3, 4, 5, 6, 9]);
    assert_eq!((&e.clients[..], &e.tokens[..]), (&[0, 2][..], &[1][..]));
    assert!(
        e.what.contains("client 0 (token 1), released at 100 µs")
            && e.what
                .contains("client 2's acquisition invoked at 150 µs ended unknown"),
        "{}",
        e.what
    );
}

#[test]
fn the_same_stretch_while_a_fault_is_open_is_not_stuck() {
    let mut h = abandoned_lock(100);
    h.extend([fault(50, EventKind::Invoke), fault(3000, EventKind::Ok)]);
    let v = run(&Availability, h.clone());
    assert_eq!(
        (v.validity, count(&v, STUCK_LOCKS)),
        (SafetyVerdict::Safe, 0)
    );
    // A fault that never healed stays open to the end.
    h.pop();
    assert_eq!(count(&run(&Availability, h), STUCK_LOCKS), 0);
    // A fault healed before the stretch began does not excuse it.
    let mut h = abandoned_lock(100);
    h.extend([fault(20, EventKind::Invoke), fault(60, EventKind::Ok)]);
    assert_eq!(count(&run(&Availability, h), STUCK_LOCKS), 1);
}

#[test]
fn an_unknown_acquisition_between_two_refusals_may_have_started_a_new_lease() {
    // Free from 100: client 1 waits in vain [100, 1500] (1400 µs); client 2's acquisition
    // [1600, 1610] ends unknown (it may have been granted: a new lease); client 1 waits in vain
    // again [1700, 3500] (1800 µs). Neither stretch exceeds 2 × 1 ms; together they would.
    let h = vec![
        grant(10, 0, "k", 1, 1),
        invoke(50, 1, "k"),
        release(100, 0, "k"),
        timeout(1500, 1, "k"),
        invoke(1600, 2, "k"),
        info(1610, 2, "k"),
        invoke(1700, 1, "k"),
        timeout(3500, 1, "k"),
    ];
    let v = run(&Availability, h.clone());
    assert_eq!(
        (v.validity, count(&v, STUCK_LOCKS)),
        (SafetyVerdict::Safe, 0)
    );
    // Without client 2, client 1 waited in vain from 100 to 3500 with nothing between: stuck.
    let mut alone = h;
    alone.drain(4..6);
    assert_eq!(count(&run(&Availability, alone), STUCK_LOCKS), 1);
}

#[test]
fn a_long_legitimate_hold_is_not_stuck() {
    // Client 0 holds until 5000 (renewing: longer than its 1 ms ttl); client 1's waits are
    // all inside that hold. The longest window is client 1's second wait, 1900 µs.
    let v = run(&Availability, abandoned_lock(5000));
    assert_eq!(
        (v.validity, count(&v, STUCK_LOCKS)),
        (SafetyVerdict::Safe, 0)
    );
    assert_eq!(count(&v, MAX_UNAVAILABLE_US), 1900);
}

#[test]
fn a_short_refusal_then_a_quiet_lock_is_not_stuck() {
    // Free from 100: client 1 waits in vain until 150, then nobody asks until client 2 gets it
    // at once at 9010. Only 50 µs in vain: a wait that ended in a grant proves nothing.
    let h = vec![
        grant(10, 0, "k", 1, 1),
        release(100, 0, "k"),
        invoke(50, 1, "k"),
        timeout(150, 1, "k"),
        invoke(9000, 2, "k"),
        grant(9010, 2, "k", 2, 1),
        release(9020, 2, "k"),
    ];
    let v = run(&Availability, h);
    assert_eq!(
        (v.validity, count(&v, STUCK_LOCKS)),
        (SafetyVerdict::Safe, 0)
    );
}

#[test]
fn file_order_does_not_change_the_windows() {
    let mut h = abandoned_lock(100);
    h.reverse();
    let v = run(&Availability, h);
    assert_eq!(count(&v, STUCK_LOCKS), 1);
    assert_eq!(v.evidence[0].t_us, [200, 4000]);
    // Client 1's first wait [200, 2000] has 1800 µs, its second [2100, 4000] 1900.
    assert_eq!(count(&v, MAX_UNAVAILABLE_US), 1900);
}
