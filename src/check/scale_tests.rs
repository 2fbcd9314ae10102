//! The whole checker on a history of 100 000 grants on one key, with one double grant and one
//! stuck lock planted: the counts must come out exact (the time it takes is the benchmark's
//! business, `benches/suite.rs`, never asserted here).

use super::testkit::*;
use super::*;

const CYCLES: u64 = 100_000;
/// The end of the cycles: 100 000 cycles of 1 000 µs.
const T: u64 = CYCLES * 1000;

/// Cycle i (t = 1 000 i µs), 5 lines from line 5 i + 1: client i % 16 invokes at t, is
/// granted (token i + 1, 1 ms lease) at t + 10 and releases at t + 500; client 16 waits from
/// t + 100 and times out at t + 600. Then client 0 waits from T to T + 5 000 with nobody
/// holding (lines 500 001, 500 002): a stuck lock. Last, client 17 is granted k inside cycle
/// 50 000's hold (lines 500 003 to 500 005): a double grant.
fn long_history() -> Vec<Event> {
    let mut h = Vec::with_capacity(CYCLES as usize * 5 + 5);
    for i in 0..CYCLES {
        let (t, c) = (i * 1000, (i % 16) as u32);
        h.extend([
            invoke(t, c, "k"),
            grant(t + 10, c, "k", i + 1, 1),
            invoke(t + 100, 16, "k"),
            release(t + 500, c, "k"),
            timeout(t + 600, 16, "k"),
        ]);
    }
    let t = 50_000 * 1000;
    h.extend([
        invoke(T, 0, "k"),
        timeout(T + 5000, 0, "k"),
        invoke(t + 20, 17, "k"),
        grant(t + 30, 17, "k", 50_001, 1),
        release(t + 400, 17, "k"),
    ]);
    h
}

#[test]
fn a_hundred_thousand_grants_on_one_key_are_checked_exactly() {
    let r = evaluate_history(&History::new(long_history()), cell(18));
    let s = r.analysis.summary.safety.clone().expect("safety is filled");
    assert_eq!(s.verdict, SafetyVerdict::Unsafe);
    // One pair: client 17's [30, 400) inside client 0's [10, 500) of cycle 50 000, granted 20 µs
    // into a 1 000 µs lease: the service granted twice.
    assert_eq!(
        s.overlaps,
        Overlaps {
            granted_twice: 1,
            ..Overlaps::default()
        }
    );
    // Client 17's token 50 001 repeats cycle 50 000's; cycle 50 001's 50 002 is above it again.
    assert_eq!((s.token_regressions, s.lost_updates), (1, 0));
    // The only gap longer than 2 × 1 ms with a vain wait: from the last release (T - 500) to
    // client 0's timeout (T + 5 000).
    assert_eq!(s.stuck_locks, 1);
    // Client 0's wait from T to T + 5 000 with nothing granted; the first grant 10 µs in.
    assert_eq!(
        (s.max_unavailable_ms, s.first_acquisition_ms),
        (5.0, Some(0.01))
    );

    let classes: Vec<_> = s
        .violations
        .iter()
        .map(|v| (v.checker.as_str(), v.class.as_deref(), v.t_us.clone()))
        .collect();
    assert_eq!(
        classes,
        [
            ("mutex", Some("granted_twice"), vec![50_000_010, 50_000_030]),
            (
                "fencing",
                Some("token_regressions"),
                vec![50_000_010, 50_000_030]
            ),
            ("availability", Some("stuck_locks"), vec![T - 500, T + 5000]),
        ]
    );
    // Mutex: cycle 50 000's grant and release (250 002, 250 004), client 17's grant and
    // release (500 004, 500 005).
    assert_eq!(s.violations[0].lines, [250_002, 250_004, 500_004, 500_005]);
    // Stuck: the last holder's grant and release (499 997, 499 999), the first vain wait's
    // invoke (client 16, 499 998) and the last one's timeout (client 0, 500 002).
    assert_eq!(s.violations[2].lines, [499_997, 499_998, 499_999, 500_002]);
    assert!(
        s.violations[2]
            .what
            .contains("while 2 acquisitions waited in vain"),
        "{}",
        s.violations[2].what
    );
}

#[test]
fn the_same_history_without_what_was_planted_is_safe() {
    let mut h = long_history();
    h.truncate(CYCLES as usize * 5);
    let r = evaluate_history(&History::new(h), cell(17));
    let s = r.analysis.summary.safety.clone().expect("safety is filled");
    assert_eq!(s.verdict, SafetyVerdict::Safe);
    assert_eq!(
        (s.overlaps, s.token_regressions, s.stuck_locks),
        (Overlaps::default(), 0, 0)
    );
    // Client 16's waits, t + 100 to t + 600 with nothing granted: 0.5 ms.
    assert_eq!(s.max_unavailable_ms, 0.5);
}
