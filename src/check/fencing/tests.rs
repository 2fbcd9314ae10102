//! Fencing tokens and refused stale accesses on hand-made histories.

use super::*;
use crate::check::testkit::*;
use crate::history::Event;

#[test]
fn a_token_below_or_equal_to_the_previous_grants_is_a_regression() {
    let mut untokened = grant(35, 1, "k", 0, 1000);
    untokened.token = None;
    let h: Vec<Event> = vec![
        grant(10, 0, "k", 5, 1000), // line 1
        grant(20, 1, "k", 7, 1000), // line 2
        grant(30, 2, "k", 6, 1000), // line 3: 6 <= 7, regression
        untokened,                  // line 4: skipped
        grant(40, 0, "k", 8, 1000), // line 5: 8 > 6 (the previous grant), fine
        grant(50, 1, "k", 9, 1000), // line 6
        grant(60, 2, "k", 9, 1000), // line 7: equal, regression
        grant(70, 3, "j", 1, 1000), // line 8: another key starts afresh
    ];
    let v = run(&Fencing, h);
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!(
        (count(&v, TOKEN_REGRESSIONS), count(&v, FENCED_GRANTS)),
        (2, 7)
    );
    assert_eq!(count(&v, STALE_ACCESSES_REJECTED), 0);
    let (a, b) = (&v.evidence[0], &v.evidence[1]);
    assert_eq!(
        (&a.clients[..], &a.tokens[..], &a.t_us[..], &a.lines[..]),
        (&[1, 2][..], &[7, 6][..], &[20, 30][..], &[2, 3][..])
    );
    assert!(a.what.contains("went back below"), "{}", a.what);
    assert_eq!((&b.tokens[..], &b.lines[..]), (&[9, 9][..], &[6, 7][..]));
    assert!(b.what.contains("repeated"), "{}", b.what);
}

#[test]
fn refused_stale_accesses_are_counted_as_notes_not_violations() {
    let h = vec![
        grant(10, 0, "k", 1, 1000),    // line 1
        read(20, 0, "k", 1, 0),        // line 2
        grant(30, 1, "k", 2, 1000),    // line 3
        read(40, 1, "k", 2, 0),        // line 4: the register has seen token 2
        write(50, 1, "k", 2, 1),       // line 5
        stale_write(60, 0, "k", 1, 1), // line 6
        stale_read(70, 0, "k", 1),     // line 7
    ];
    let v = run(&Fencing, h.clone());
    assert_eq!(v.validity, SafetyVerdict::Safe);
    assert_eq!(
        (
            count(&v, STALE_ACCESSES_REJECTED),
            count(&v, TOKEN_REGRESSIONS)
        ),
        (2, 0)
    );
    assert!(
        v.summary.contains("not a violation by itself"),
        "{}",
        v.summary
    );
    let e = &v.evidence[0];
    assert_eq!(e.validity, SafetyVerdict::Safe);
    // The refused write and the accepted access with the highest token before it (line 4).
    assert_eq!(
        (&e.clients[..], &e.tokens[..], &e.lines[..]),
        (&[0][..], &[1][..], &[4, 6][..])
    );
    assert!(e.what.contains("refused client 0's write of 1 with token 1 at 60 µs (it had accepted token 2 from client 1 at 40 µs)"), "{}", e.what);
    // Out of file order: the same counts.
    let mut r = h;
    r.reverse();
    let v = run(&Fencing, r);
    assert_eq!(
        (
            count(&v, STALE_ACCESSES_REJECTED),
            count(&v, TOKEN_REGRESSIONS)
        ),
        (2, 0)
    );
}

#[test]
fn readers_are_ordered_against_writers_only_and_a_semaphore_not_at_all() {
    let rw = LockKind::RwLock { read_ratio: 0.5 };
    let h = vec![
        reading(grant(10, 0, "k", 5, 1000)), // line 1
        reading(grant(20, 1, "k", 4, 1000)), // line 2: a reader below a reader: fine
        writing(grant(30, 2, "k", 6, 1000)), // line 3: above the last grant (4): fine
        reading(grant(40, 3, "k", 7, 1000)), // line 4: above the writer's 6
        reading(grant(50, 0, "k", 3, 1000)), // line 5: below the writer's 6: regression
        writing(grant(60, 1, "k", 2, 1000)), // line 6: below the last grant (3): regression
    ];
    let v = run_kind(&Fencing, h.clone(), rw);
    assert_eq!(v.validity, SafetyVerdict::Unsafe);
    assert_eq!(count(&v, TOKEN_REGRESSIONS), 2);
    assert_eq!(v.evidence[0].lines, vec![3, 5]);
    assert_eq!(v.evidence[1].lines, vec![5, 6]);
    // The same grants, exclusive: every one out of order is a regression.
    let exclusive = h.iter().cloned().map(|mut e| {
        e.mode = None;
        e
    });
    assert_eq!(
        count(&run(&Fencing, exclusive.collect()), TOKEN_REGRESSIONS),
        3
    );
    // A semaphore's holders are granted in no token order.
    let v = run_kind(&Fencing, h, LockKind::Semaphore { permits: 3 });
    assert_eq!(v.validity, SafetyVerdict::Safe);
    assert_eq!(
        (count(&v, TOKEN_REGRESSIONS), count(&v, FENCED_GRANTS)),
        (0, 6)
    );
}
