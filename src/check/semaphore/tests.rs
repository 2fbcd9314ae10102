//! Counting exclusion on hand-made histories; every count worked out by hand in the comments.

use super::*;
use crate::check::testkit::*;
use crate::history::Event;
use crate::results::LockKind;

fn check(events: Vec<Event>, permits: u32) -> Verdict {
    run_kind(&Semaphore, events, LockKind::Semaphore { permits })
}

fn counts(v: &Verdict) -> [u64; 3] {
    [OVER_PERMITS, POSSIBLE_OVER_PERMITS, MAX_HOLDERS].map(|c| count(v, c))
}

/// Client `c` holds k from `from` to `to` with `token`: grant, then release (2 lines).
fn hold(c: u32, from: u64, to: u64, token: u64) -> Vec<Event> {
    vec![grant(from, c, "k", token, 1000), release(to, c, "k")]
}

/// Clients 0 (10 to 300) and 1 (100 to 400) hold k together; client 2 is granted at `c_at`.
fn three(c_at: u64) -> Vec<Event> {
    let mut h = hold(0, 10, 300, 1); // lines 1-2
    h.extend(hold(1, 100, 400, 2)); // lines 3-4
    h.extend(hold(2, c_at, 500, 3)); // lines 5-6
    h
}

#[test]
fn up_to_the_permits_at_once_is_safe() {
    // Client 2 is granted at 300, the microsecond client 0's release begins: two at a time.
    let v = check(three(300), 2);
    assert_eq!(v.validity, SafetyVerdict::Safe, "{}", v.summary);
    assert_eq!(counts(&v), [0, 0, 2]);
    assert_eq!(count(&v, PERMITS), 2);
    assert!(v.evidence.is_empty());
}

#[test]
fn more_certain_holders_than_permits_is_a_violation_naming_every_holder() {
    // Client 2 granted at 200, while 0 and 1 hold: three holders, two permits.
    let v = check(three(200), 2);
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!(counts(&v), [1, 0, 3]);
    let e = &v.evidence[0];
    assert_eq!(e.class.as_deref(), Some(OVER_PERMITS));
    assert_eq!(
        (e.key.as_deref(), &e.clients[..], &e.tokens[..]),
        (Some("k"), &[0, 1, 2][..], &[1, 2, 3][..])
    );
    // Every holder's grant and release.
    assert_eq!(e.lines, [1, 2, 3, 4, 5, 6]);
    assert_eq!(e.t_us, [10, 100, 200]);
    assert!(
        e.what
            .starts_with("key k: 3 holders at 200 µs, more than its 2 permits: client 0 (token 1) from 10 µs to 300 µs"),
        "{}",
        e.what
    );
    // With three permits the same history is safe; a cell of another kind has one permit,
    // so two holders at once are already too many there.
    assert_eq!(check(three(200), 3).validity, SafetyVerdict::Safe);
    let mutex_cell = run_kind(&Semaphore, three(300), LockKind::Mutex);
    assert_eq!(counts(&mutex_cell), [2, 0, 2]);
}

#[test]
fn unknown_acquisitions_past_the_permits_give_unknown() {
    // Clients 0 (10 to 300) and 1 (100 to 400) hold k; client 2's acquisition, invoked at 150,
    // ends unknown at 250: three holders only if it was granted.
    let mut h = three(100);
    h.truncate(4);
    h.extend([invoke(150, 2, "k"), info(250, 2, "k")]);
    let v = check(h, 2);
    assert_eq!(v.validity, SafetyVerdict::Unknown, "{}", v.summary);
    assert_eq!(counts(&v), [0, 1, 2]);
    let e = &v.evidence[0];
    assert_eq!(e.class.as_deref(), Some(POSSIBLE_OVER_PERMITS));
    assert_eq!(
        (&e.clients[..], &e.lines[..]),
        (&[0, 1, 2][..], &[1, 2, 3, 4, 5, 6][..])
    );
    assert!(
        e.what
            .contains("only if the unknown acquisitions were granted"),
        "{}",
        e.what
    );

    // A certain grant into a key already holding one certain and one possible holder.
    let h = vec![
        grant(10, 0, "k", 1, 1000),
        invoke(20, 1, "k"),
        info(90, 1, "k"),
        grant(50, 2, "k", 2, 1000),
        release(100, 0, "k"),
        release(100, 2, "k"),
    ];
    assert_eq!(counts(&check(h, 2)), [0, 1, 2]);
}

#[test]
fn the_counts_fill_the_semaphore_fields_of_safety() {
    let v = check(three(200), 2);
    let mut s = Safety::default();
    v.counts.add_to(&mut s);
    assert_eq!(
        (s.over_permits, s.possible_over_permits),
        (Some(1), Some(0))
    );
    assert_eq!(s.overlaps, crate::results::Overlaps::default());
}
