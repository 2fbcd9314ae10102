//! Reentrant mutual exclusion on hand-made histories; every count worked out by hand in the
//! comments.

use super::*;
use crate::check::mutex::{self, EXPIRED_UNTOLD, GRANTED_TWICE, TOLD_AND_WENT_ON, UNKNOWN};
use crate::check::testkit::*;
use crate::history::Event;
use crate::results::LockKind;

const DEPTH_2: LockKind = LockKind::Reentrant { depth: 2 };

fn check(events: Vec<Event>) -> Verdict {
    run_kind(&Reentrant, events, DEPTH_2)
}

fn overlaps(v: &Verdict) -> [u64; 4] {
    [GRANTED_TWICE, TOLD_AND_WENT_ON, EXPIRED_UNTOLD, UNKNOWN].map(|c| count(v, c))
}

/// Client 0 holds k from 10 to 500 (token 5), taking it again from 100 to 200 (depth 2);
/// client 1 asks at 20 and is granted at `b_at` (token 6), releasing at `b_at + 100`.
fn nested_then(b_at: u64) -> Vec<Event> {
    vec![
        invoke(0, 0, "k"),                        // line 1
        at_depth(grant(10, 0, "k", 5, 1000), 1),  // line 2
        invoke(20, 1, "k"),                       // line 3
        invoke(90, 0, "k"),                       // line 4
        at_depth(grant(100, 0, "k", 5, 1000), 2), // line 5
        at_depth(release(200, 0, "k"), 2),        // line 6
        at_depth(release(500, 0, "k"), 1),        // line 7
        grant(b_at, 1, "k", 6, 1000),             // line 8
        release(b_at + 100, 1, "k"),              // line 9
    ]
}

#[test]
fn nested_holds_of_one_client_are_one_hold_and_a_clean_history_is_safe() {
    // Client 1 is granted at 500, when client 0's last release begins: no overlap.
    let v = check(nested_then(500));
    assert_eq!(v.validity, SafetyVerdict::Safe, "{}", v.summary);
    assert_eq!(overlaps(&v), [0, 0, 0, 0]);
    assert_eq!(
        (
            count(&v, REENTRIES),
            count(&v, RELEASE_BY_NON_HOLDER),
            count(&v, POSSIBLE_RELEASE_BY_NON_HOLDER)
        ),
        (1, 0, 0)
    );
    assert!(v.evidence.is_empty(), "{:?}", v.evidence);
}

#[test]
fn another_clients_grant_inside_the_outer_hold_is_one_violation() {
    // Client 1 granted at 150: inside client 0's outer hold (10 to 500) and its nested one (100
    // to 200). One overlap of outer holds, where the mutex checker sees two sections overlap.
    let v = check(nested_then(150));
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!(overlaps(&v), [1, 0, 0, 0]);
    let e = &v.evidence[0];
    assert_eq!(e.class.as_deref(), Some(GRANTED_TWICE));
    assert_eq!(
        (e.key.as_deref(), &e.clients[..], &e.tokens[..]),
        (Some("k"), &[0, 1][..], &[5, 6][..])
    );
    // The outer grant and its last release, client 1's grant and release.
    assert_eq!(e.lines, [2, 7, 8, 9]);
    assert_eq!(e.t_us, [10, 150]);
    assert!(
        e.what
            .contains("client 0 (token 5) held from 10 µs to 500 µs"),
        "{}",
        e.what
    );
    let m = run_kind(&mutex::Mutex, nested_then(150), DEPTH_2);
    assert_eq!(count(&m, GRANTED_TWICE), 2, "the mutex counts each section");

    // Granted at 300, after the nested hold ended but inside the outer one: still a violation
    // (the mutex's pairing would have said the same, the outer hold runs to 500).
    let v = check(nested_then(300));
    assert_eq!(overlaps(&v), [1, 0, 0, 0]);
}

#[test]
fn a_release_by_a_client_holding_nothing_is_a_violation() {
    // Client 0 is granted once (10) and releases twice (100, 200): the second release gives
    // back a hold it does not have.
    let h = vec![
        invoke(0, 0, "k"),                       // line 1
        at_depth(grant(10, 0, "k", 1, 1000), 1), // line 2
        at_depth(release(100, 0, "k"), 1),       // line 3
        release(200, 0, "k"),                    // line 4
    ];
    let v = check(h);
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!(
        (count(&v, RELEASE_BY_NON_HOLDER), overlaps(&v)),
        (1, [0, 0, 0, 0])
    );
    let e = &v.evidence[0];
    assert_eq!(e.class.as_deref(), Some(RELEASE_BY_NON_HOLDER));
    assert_eq!((e.key.as_deref(), &e.clients[..]), (Some("k"), &[0][..]));
    // The release that gave everything back, and the one after it.
    assert_eq!((&e.lines[..], &e.t_us[..]), (&[3, 4][..], &[100, 200][..]));
    assert!(
        e.what
            .contains("client 0 released at 200 µs holding nothing")
            && e.what
                .contains("its last hold of k was given back at 100 µs"),
        "{}",
        e.what
    );

    // A client that never held the key, releasing it.
    let v = check(vec![release(50, 3, "k")]);
    assert_eq!(count(&v, RELEASE_BY_NON_HOLDER), 1);
    assert_eq!(v.evidence[0].lines, [1]);
    assert!(
        v.evidence[0].what.contains("it was never granted k before"),
        "{}",
        v.evidence[0].what
    );
}

#[test]
fn unknown_acquisitions_give_unknown_and_a_re_entry_that_ended_unknown_adds_nothing() {
    // Client 2's acquisition, invoked at 25 inside client 0's outer hold, ends unknown at 40.
    let mut h = nested_then(500);
    h.extend([invoke(25, 2, "k"), info(40, 2, "k")]);
    let v = check(h);
    assert_eq!(v.validity, SafetyVerdict::Unknown, "{}", v.summary);
    assert_eq!(overlaps(&v), [0, 0, 0, 1]);
    assert_eq!(v.evidence[0].lines, [2, 7, 10, 11]);

    // Client 0's own re-entry at 300 ends unknown at 350: it held k already, nothing changes.
    let mut h = nested_then(500);
    h.extend([invoke(300, 0, "k"), info(350, 0, "k")]);
    assert_eq!(check(h).validity, SafetyVerdict::Safe);

    // Client 2 releases k after an acquisition of it ended unknown: it may have held k.
    let v = check(vec![
        invoke(0, 2, "k"),
        info(30, 2, "k"),
        release(60, 2, "k"),
    ]);
    assert_eq!(v.validity, SafetyVerdict::Unknown);
    assert_eq!(
        (
            count(&v, RELEASE_BY_NON_HOLDER),
            count(&v, POSSIBLE_RELEASE_BY_NON_HOLDER)
        ),
        (0, 1)
    );
    assert_eq!(
        v.evidence[0].class.as_deref(),
        Some(POSSIBLE_RELEASE_BY_NON_HOLDER)
    );
    assert_eq!(v.evidence[0].lines, [3]);
}

#[test]
fn the_counts_fill_overlaps_and_releases_by_non_holder() {
    let v = check(nested_then(150));
    let mut s = Safety::default();
    v.counts.add_to(&mut s);
    assert_eq!(
        (s.overlaps.granted_twice, s.releases_by_non_holder),
        (1, Some(0))
    );
    assert_eq!((s.over_permits, s.possible_over_permits), (None, None));
}
