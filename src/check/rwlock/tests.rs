//! Read-write exclusion on hand-made histories; every count worked out by hand in the comments.

use super::*;
use crate::check::SafetyVerdict;
use crate::check::mutex::{self, EXPIRED_UNTOLD, GRANTED_TWICE, TOLD_AND_WENT_ON, UNKNOWN};
use crate::check::testkit::*;
use crate::history::Event;
use crate::results::LockKind;

const RW: LockKind = LockKind::RwLock { read_ratio: 0.5 };

fn check(events: Vec<Event>) -> Verdict {
    run_kind(&RwLock, events, RW)
}

fn overlaps(v: &Verdict) -> [u64; 4] {
    [GRANTED_TWICE, TOLD_AND_WENT_ON, EXPIRED_UNTOLD, UNKNOWN].map(|c| count(v, c))
}

/// A hold of client `c` from `from` to `to` with `token`: invoke 5 µs before, grant, release;
/// `mode` marks the acquire events.
fn hold(c: u32, from: u64, to: u64, token: u64, mode: fn(Event) -> Event) -> Vec<Event> {
    vec![
        mode(invoke(from - 5, c, "k")),
        mode(grant(from, c, "k", token, 1000)),
        release(to, c, "k"),
    ]
}

#[test]
fn readers_share_and_a_writer_after_them_is_safe() {
    // Readers 0 (10 to 300) and 1 (100 to 400) overlap; writer 2 is granted at 400, when the
    // last reader's release begins.
    let mut h = hold(0, 10, 300, 1, reading);
    h.extend(hold(1, 100, 400, 2, reading));
    h.extend(hold(2, 400, 500, 3, writing));
    let v = check(h.clone());
    assert_eq!(v.validity, SafetyVerdict::Safe, "{}", v.summary);
    assert_eq!((overlaps(&v), count(&v, SHARED)), ([0, 0, 0, 0], 1));
    assert!(v.evidence.is_empty());
    // The exclusive mutex checker would call the readers' overlap a violation.
    let m = run_kind(&mutex::Mutex, h, RW);
    assert_eq!(count(&m, GRANTED_TWICE), 1);
}

#[test]
fn a_writer_granted_while_a_reader_holds_is_a_violation() {
    // Reader 0 holds from 10 to 300 (lines 1-3); writer 1 is granted at 100 (lines 4-6).
    let mut h = hold(0, 10, 300, 1, reading);
    h.extend(hold(1, 100, 200, 2, writing));
    let v = check(h);
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!((overlaps(&v), count(&v, SHARED)), ([1, 0, 0, 0], 0));
    let e = &v.evidence[0];
    assert_eq!(e.class.as_deref(), Some(GRANTED_TWICE));
    assert_eq!(
        (&e.clients[..], &e.tokens[..], &e.lines[..], &e.t_us[..]),
        (&[0, 1][..], &[1, 2][..], &[2, 3, 5, 6][..], &[10, 100][..])
    );
    assert!(
        e.what
            .contains("client 0 (token 1) held to read from 10 µs to 300 µs"),
        "{}",
        e.what
    );
}

#[test]
fn a_reader_granted_while_a_writer_holds_and_two_writers_are_violations() {
    // Writer 0 from 10 to 300; reader 1 granted at 100; writer 2 granted at 250.
    let mut h = hold(0, 10, 300, 1, writing);
    h.extend(hold(1, 100, 200, 2, reading));
    h.extend(hold(2, 250, 400, 3, writing));
    let v = check(h);
    // (0, 1) and (0, 2) overlap with a writer; 1 ended at 200, before 2's grant.
    assert_eq!(overlaps(&v), [2, 0, 0, 0]);
    let pairs: Vec<&[u32]> = v.evidence.iter().map(|e| &e.clients[..]).collect();
    assert_eq!(pairs, [&[0, 1][..], &[0, 2][..]]);

    // An acquisition without a mode is exclusive: it conflicts with a reader too.
    let mut h = hold(0, 10, 300, 1, reading);
    h.extend(hold(1, 100, 200, 2, |e| e));
    assert_eq!(overlaps(&check(h)), [1, 0, 0, 0]);
}

#[test]
fn an_unknown_writer_among_readers_is_unknown_and_an_unknown_reader_is_fine() {
    // Reader 0 holds from 10 to 300; client 1's write acquisition, invoked at 50, ends unknown.
    let mut h = hold(0, 10, 300, 1, reading);
    h.extend([writing(invoke(50, 1, "k")), writing(info(80, 1, "k"))]);
    let v = check(h);
    assert_eq!(v.validity, SafetyVerdict::Unknown);
    assert_eq!(overlaps(&v), [0, 0, 0, 1]);
    assert_eq!(v.evidence[0].lines, [2, 3, 4, 5]);
    assert!(
        v.evidence[0]
            .what
            .contains("acquisition to write invoked at 50 µs"),
        "{}",
        v.evidence[0].what
    );

    // The same acquisition asking to read: readers share, nothing to judge.
    let mut h = hold(0, 10, 300, 1, reading);
    h.extend([reading(invoke(50, 1, "k")), reading(info(80, 1, "k"))]);
    let v = check(h);
    assert_eq!((v.validity, count(&v, SHARED)), (SafetyVerdict::Safe, 1));
}
