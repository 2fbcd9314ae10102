//! Mutual exclusion on hand-made histories; every count worked out by hand in the comments.

use super::*;
use crate::check::testkit::*;
use crate::history::Event;

fn counts(v: &Verdict) -> [u64; 4] {
    [GRANTED_TWICE, TOLD_AND_WENT_ON, EXPIRED_UNTOLD, UNKNOWN].map(|c| count(v, c))
}

/// Client 0 holds k from 10 to 500 (token 5, ttl 1000 ms); client 1 is granted k at `b_at`
/// (token 6) and releases at 600; `extra` events are added at the end of the file.
fn two_holders(b_at: u64, ttl_ms: u64, extra: Vec<Event>) -> Vec<Event> {
    let mut h = vec![
        invoke(0, 0, "k"),            // line 1
        grant(10, 0, "k", 5, ttl_ms), // line 2
        invoke(20, 1, "k"),           // line 3
        grant(b_at, 1, "k", 6, 1000), // line 4
        release(500, 0, "k"),         // line 5
        release(600, 1, "k"),         // line 6
    ];
    h.extend(extra);
    h
}

#[test]
fn a_second_grant_inside_a_live_lease_is_granted_twice() {
    let v = run(&Mutex, two_holders(100, 1000, vec![]));
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!(counts(&v), [1, 0, 0, 0]);
    let e = &v.evidence[0];
    assert_eq!(e.class.as_deref(), Some(GRANTED_TWICE));
    assert_eq!(
        (e.key.as_deref(), &e.clients[..], &e.tokens[..]),
        (Some("k"), &[0, 1][..], &[5, 6][..])
    );
    assert_eq!(e.t_us, [10, 100]);
    // A's grant and release, B's grant and release.
    assert_eq!(e.lines, [2, 4, 5, 6]);
    assert!(
        e.what
            .contains("client 0 (token 5) held from 10 µs to 500 µs"),
        "{}",
        e.what
    );
    assert!(e.what.contains("granted the lock twice"), "{}", e.what);
}

#[test]
fn a_holder_told_before_the_next_grant_went_on() {
    // Client 0 was told at 50, client 1 granted at 100: 50 <= 100.
    let v = run(&Mutex, two_holders(100, 1000, vec![lost(50, 0, "k")]));
    assert_eq!(counts(&v), [0, 1, 0, 0]);
    assert_eq!(
        v.evidence[0].lines,
        [2, 4, 5, 6, 7],
        "the lost signal is line 7"
    );
    assert!(
        v.evidence[0]
            .what
            .contains("told its lease was lost at 50 µs")
    );
    // Told in the same microsecond as the grant still counts as told.
    let v = run(&Mutex, two_holders(100, 1000, vec![lost(100, 0, "k")]));
    assert_eq!(counts(&v), [0, 1, 0, 0]);
}

#[test]
fn a_holder_told_only_after_the_next_grant_had_expired_untold() {
    // Told at 200, after client 1's grant at 100, with no TTL reported: the paused-client case.
    let v = run(&Mutex, two_holders(100, 0, vec![lost(200, 0, "k")]));
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Unsafe, [0, 0, 1, 0])
    );
    assert!(v.evidence[0].what.contains("told only at 200 µs"));
}

#[test]
fn a_grant_inside_the_first_lease_is_granted_twice_even_if_the_holder_is_told_later() {
    // Client 0's lease runs 1 000 ms from 10 µs; client 1 is granted at 100 µs and client 0
    // told at 200 µs: expiry cannot explain it, the service lost the lock (a Redlock master
    // restarted empty, seen in the chaos matrix).
    let v = run(&Mutex, two_holders(100, 1000, vec![lost(200, 0, "k")]));
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Unsafe, [1, 0, 0, 0])
    );
    // Past the first lease, a later signal is the paused holder again.
    let mut h = two_holders(2_000, 1, vec![lost(2_500, 0, "k")]);
    h[4] = release(3_000, 0, "k");
    h[5] = release(3_100, 1, "k");
    assert_eq!(counts(&run(&Mutex, h)), [0, 0, 1, 0]);
}

#[test]
fn a_grant_past_the_first_holders_ttl_is_expired_untold() {
    // ttl 0.1 ms would be too fine: ttl_ms is whole ms. Grant at 10 with 1 ms: expiry 1010 µs;
    // the holder releases at 500 in `two_holders`, so hold it longer here.
    let h = vec![
        grant(10, 0, "k", 5, 1),
        grant(1011, 1, "k", 6, 1000),
        release(3000, 0, "k"),
        release(3100, 1, "k"),
    ];
    let v = run(&Mutex, h.clone());
    assert_eq!(counts(&v), [0, 0, 1, 0]);
    assert!(v.evidence[0].what.contains("had run out untold at 1010 µs"));
    // At exactly 1010 µs the lease had not run out yet: the service granted twice.
    let mut at_expiry = h.clone();
    at_expiry[1].t_us = 1010;
    assert_eq!(counts(&run(&Mutex, at_expiry)), [1, 0, 0, 0]);
    // A TTL of 0 was not reported (the mock's default): no expiry to blame.
    let mut unreported = h.clone();
    unreported[0].ttl_ms = Some(0);
    assert_eq!(counts(&run(&Mutex, unreported)), [1, 0, 0, 0]);
}

#[test]
fn back_to_back_holds_and_one_clients_own_holds_do_not_overlap() {
    // Client 1 granted at client 0's release invoke (500): inner bounds do not overlap.
    let v = run(&Mutex, two_holders(500, 1000, vec![]));
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Safe, [0, 0, 0, 0])
    );
    assert!(v.evidence.is_empty());
    // Different keys never overlap.
    let h = vec![grant(10, 0, "a", 1, 1000), grant(20, 1, "b", 1, 1000)];
    assert_eq!(run(&Mutex, h).validity, SafetyVerdict::Safe);
}

/// Client 0 holds k from 10 to 500; client 1's acquisition invoked at 20 ends unknown at 300.
fn info_overlap(extra: Vec<Event>) -> Vec<Event> {
    let mut h = vec![
        invoke(0, 0, "k"),
        grant(10, 0, "k", 5, 1000),
        invoke(20, 1, "k"), // line 3
        info(300, 1, "k"),  // line 4
        release(500, 0, "k"),
    ];
    h.extend(extra);
    h
}

#[test]
fn an_unknown_acquisition_inside_a_hold_is_unknown() {
    let v = run(&Mutex, info_overlap(vec![]));
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Unknown, [0, 0, 0, 1])
    );
    let e = &v.evidence[0];
    assert_eq!(
        (e.validity, e.class.as_deref()),
        (SafetyVerdict::Unknown, Some(UNKNOWN))
    );
    assert_eq!(e.lines, [2, 3, 4, 5]);
    assert_eq!(e.clients, [0, 1]);
    // A write by client 1 outside client 0's hold proves nothing about the overlap.
    let v = run(&Mutex, info_overlap(vec![write(600, 1, "k", 6, 1)]));
    assert_eq!(counts(&v), [0, 0, 0, 1]);
    // Nor does a refused write inside it.
    let v = run(&Mutex, info_overlap(vec![stale_write(200, 1, "k", 6, 1)]));
    assert_eq!(counts(&v), [0, 0, 0, 1]);
}

#[test]
fn an_unknown_acquisition_whose_client_wrote_inside_the_hold_is_a_certain_overlap() {
    // Client 1 wrote at 200: inside its possible hold [20, 300] and client 0's [10, 500).
    // Client 0 was granted first, untold, 200 µs < 10 + 1 s: granted twice, at the write.
    let v = run(&Mutex, info_overlap(vec![write(200, 1, "k", 6, 1)]));
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Unsafe, [1, 0, 0, 0])
    );
    let e = &v.evidence[0];
    assert_eq!(e.t_us, [10, 200]);
    assert_eq!(e.lines, [2, 3, 4, 5, 6], "the write is line 6");
    assert!(e.what.contains("accepted write at 200 µs"), "{}", e.what);
}

#[test]
fn a_write_inside_the_possible_hold_but_after_the_other_hold_proves_no_overlap() {
    // Client 1's acquisition runs from 20 to 800 (info); it wrote at 550, after client 0
    // released at 500: it may have been granted only after that release.
    let h = vec![
        grant(10, 0, "k", 5, 1000),
        invoke(20, 1, "k"),
        release(500, 0, "k"),
        write(550, 1, "k", 6, 1),
        info(800, 1, "k"),
    ];
    let v = run(&Mutex, h);
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Unknown, [0, 0, 0, 1])
    );
}

#[test]
fn every_overlapping_pair_is_counted_and_ten_are_shown_in_time_order() {
    // Client 0 holds k from 0 to 10 000; clients 1..=12 each hold [100 i, 100 i + 50):
    // 12 overlaps with client 0, none among themselves.
    let mut h = vec![grant(0, 0, "k", 1, 60_000), release(10_000, 0, "k")];
    for c in (1..=12u32).rev() {
        let t = 100 * c as u64;
        h.push(grant(t, c, "k", 1 + c as u64, 60_000));
        h.push(release(t + 50, c, "k"));
    }
    let v = run(&Mutex, h);
    assert_eq!(counts(&v), [12, 0, 0, 0]);
    assert_eq!(v.evidence.len(), MAX_EVIDENCE_SHOWN);
    let firsts: Vec<u32> = v.evidence.iter().map(|e| e.clients[1]).collect();
    assert_eq!(firsts, (1..=10).collect::<Vec<_>>());
}

const MAX_EVIDENCE_SHOWN: usize = crate::check::MAX_EVIDENCE;

#[test]
fn out_of_file_order_events_give_the_same_verdict() {
    let mut h = two_holders(100, 0, vec![lost(200, 0, "k")]);
    h.reverse();
    let v = run(&Mutex, h);
    assert_eq!(counts(&v), [0, 0, 1, 0]);
    // Reversed: the grant of client 0 is now line 6, client 1's line 4, releases 3 and 2,
    // the lost signal line 1.
    assert_eq!(v.evidence[0].lines, [1, 2, 3, 4, 6]);
}

/// Client 0 takes k twice (a reentrant lock: grants at 10 and 20, token 1) and releases twice
/// (30, 40); client 1 is granted k at `b_at` (token 2) and releases at 60.
fn reentrant(b_at: u64) -> Vec<Event> {
    vec![
        invoke(0, 0, "k"),            // line 1
        grant(10, 0, "k", 1, 1000),   // line 2
        invoke(15, 0, "k"),           // line 3
        grant(20, 0, "k", 1, 1000),   // line 4
        release(30, 0, "k"),          // line 5: closes the grant at 20
        release(40, 0, "k"),          // line 6: closes the grant at 10
        invoke(5, 1, "k"),            // line 7
        grant(b_at, 1, "k", 2, 1000), // line 8
        release(60, 1, "k"),          // line 9
    ]
}

#[test]
fn two_grants_released_twice_hold_until_the_last_release_not_to_the_end() {
    // Client 0 holds [10, 40) and [20, 30); client 1's grant at 50 comes after both.
    let v = run(&Mutex, reentrant(50));
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Safe, [0, 0, 0, 0])
    );
    assert!(v.summary.contains("3 holds"), "{}", v.summary);
    // At 35 client 0 still holds its first grant (released at 40), not its second (30).
    let v = run(&Mutex, reentrant(35));
    assert_eq!(
        (v.validity, counts(&v)),
        (SafetyVerdict::Unsafe, [1, 0, 0, 0])
    );
    let e = &v.evidence[0];
    assert_eq!(
        (&e.t_us[..], &e.lines[..]),
        (&[10, 35][..], &[2, 6, 8, 9][..])
    );
    // At 25 it holds both: two overlapping pairs, the outer one first.
    let v = run(&Mutex, reentrant(25));
    assert_eq!(counts(&v), [2, 0, 0, 0]);
    assert_eq!(v.evidence[0].lines, [2, 6, 8, 9]);
    assert_eq!(v.evidence[1].lines, [4, 5, 8, 9]);
}
