//! The figures of the other kinds of lock (`rwlock`, `semaphore`, `try_lock`) on hand-made
//! histories, every expected number worked out by hand.

use std::time::Duration;

use super::tests::assert_near;
use crate::history::{ErrorKind, Event, EventKind, Events, Mode, Op};
use crate::results::testkit::cell;
use crate::results::{CellInfo, LockKind};

fn ev(t: u64, c: u32, kind: EventKind, op: Op, mode: Option<Mode>) -> Event {
    Event {
        mode,
        ..Event::new(t, c, kind, op, "k")
    }
}
fn ask(t: u64, c: u32, mode: Option<Mode>) -> Event {
    ev(t, c, EventKind::Invoke, Op::Acquire, mode)
}
fn grant(t: u64, c: u32, mode: Option<Mode>) -> Event {
    ev(t, c, EventKind::Ok, Op::Acquire, mode)
}
fn refused(t: u64, c: u32, mode: Option<Mode>) -> Event {
    let mut e = ev(t, c, EventKind::Fail, Op::Acquire, mode);
    e.error_kind = Some(ErrorKind::Timeout);
    e
}
fn release(t: u64, c: u32) -> Event {
    ev(t, c, EventKind::Invoke, Op::Release, None)
}
const R: Option<Mode> = Some(Mode::Read);
const W: Option<Mode> = Some(Mode::Write);

/// A cell measured from `warmup_us` to `end_us`.
fn window(warmup_us: u64, end_us: u64, lock: LockKind) -> CellInfo {
    CellInfo {
        warmup: Duration::from_micros(warmup_us),
        end_us: Some(end_us),
        lock,
        ..cell(8)
    }
}

/// One key, measured over 1 000..11 000 µs (10 ms).
///
/// Readers: c0 granted at 1 000 (asked in the warm-up: its hold counts, its latency does not),
/// c1 500 µs, c2 1 000 µs, c1 again 800 µs from its intended start (its `ok` has no mode: the
/// invoke's read counts) and never released. Writers: c3 waits 4 000 µs for the readers, c4
/// times out after 4 500 µs, c5 is still waiting at the end (6 000 µs), c6 says no mode at all
/// (a write) and waits 500 µs.
fn rwlock_history() -> Vec<Event> {
    let mut late = ask(9_000, 1, R);
    late.intended_us = Some(8_800);
    vec![
        ask(500, 0, R),
        grant(1_000, 0, R),
        ask(1_500, 1, R),
        grant(2_000, 1, R),
        ask(2_000, 3, W),
        ask(2_500, 2, R),
        ask(3_000, 4, W),
        grant(3_500, 2, R),
        release(4_000, 1),
        release(5_000, 0),
        ask(5_000, 5, W),
        release(6_000, 2),
        grant(6_000, 3, W),
        refused(7_500, 4, W),
        release(8_000, 3),
        ask(8_000, 6, None),
        grant(8_500, 6, None),
        late,
        release(9_500, 6),
        grant(9_600, 1, None),
    ]
}

fn rwlock_of(history: &[Event]) -> crate::results::RwLockFigures {
    let events = Events::from(history);
    let cell = window(1_000, 11_000, LockKind::RwLock { read_ratio: 0.5 });
    super::rwlock::figures(&events, &events.operations(), &events.sections(), &cell)
}

#[test]
fn readers_and_writers_are_counted_apart_and_writer_starvation_counts_every_wait() {
    let f = rwlock_of(&rwlock_history());
    // Readers c1, c2, c1 again: 3 in 10 ms; latencies 500, 1 000, 800.
    assert_eq!(f.readers.acquisitions, 3);
    assert!((f.readers.per_s - 300.0).abs() < 1e-9, "{f:?}");
    let r = f.readers.latency_us;
    assert_eq!((r.count, r.p50, r.max), (3, 800, 1_000), "{r:?}");
    // Writers c3 (4 000) and c6 (no mode: 500): 2 in 10 ms.
    assert_eq!(f.writers.acquisitions, 2);
    assert!((f.writers.per_s - 200.0).abs() < 1e-9, "{f:?}");
    let w = f.writers.latency_us;
    assert_eq!((w.count, w.p50), (2, 500), "{w:?}");
    assert_near(w.max, 4_000);
    // Writer waits 4 000, 4 500 (timed out), 6 000 (open to the end), 500.
    assert_eq!(
        f.writer_wait_max_us, 6_000,
        "exact, not a histogram's bucket"
    );
    assert_near(f.writer_wait_p99_us, 6_000);
    assert_eq!(f.reader_wait_p99_us, 1_000);
    // Read holds [1 000, 5 000), [2 000, 4 000), [3 500, 6 000), [9 600, 11 000): 1 reader for
    // 1 000 µs, 2 for 1 500, 3 for 500, 2 for 1 000, 1 for 1 000, 1 for 1 400: 9 900 reader-µs
    // over 10 000 µs. c6's hold, with no mode, is a writer's.
    assert!((f.concurrent_readers_mean - 0.99).abs() < 1e-12, "{f:?}");
    assert_eq!(f.concurrent_readers_max, 3);
}

#[test]
fn a_writer_that_timed_out_waited_its_whole_timeout() {
    // Without the writer still waiting at the end, the longest wait is c4's timeout.
    let history: Vec<Event> = rwlock_history()
        .into_iter()
        .filter(|e| e.client() != Some(5))
        .collect();
    let f = rwlock_of(&history);
    assert_eq!(f.writer_wait_max_us, 4_500);
    assert_eq!(
        f.writers.acquisitions, 2,
        "a timeout is a wait, not a grant"
    );
}

#[test]
fn a_history_with_no_acquisitions_gives_zeros_without_panicking() {
    let f = rwlock_of(&[release(2_000, 1), grant(3_000, 2, R)]);
    assert_eq!(f.readers.acquisitions, 0);
    assert_eq!(f.writer_wait_max_us, 0);
    // An `ok` without its invoke holds nothing a key was asked for: no keys, mean 0.
    assert_eq!(f.concurrent_readers_mean, 0.0);
}

/// Permits 2, one key, measured over 0..10 000 µs. Holds [100, 4 100), [1 000, 3 000),
/// [2 000, 6 000) (three at once: over the permits) and [7 000, end); c4 times out. Wake-ups
/// 0 + 1 + 2 + 1 + 2 (the timed-out waiter's too) = 6 for 4 grants.
fn semaphore_history() -> Vec<Event> {
    let woke = |mut e: Event, n: u64| {
        e.wakeups = Some(n);
        e
    };
    vec![
        ask(0, 0, None),
        woke(grant(100, 0, None), 0),
        ask(500, 1, None),
        woke(grant(1_000, 1, None), 1),
        ask(1_500, 2, None),
        woke(grant(2_000, 2, None), 2),
        release(3_000, 1),
        release(4_100, 0),
        release(6_000, 2),
        ask(6_000, 3, None),
        woke(grant(7_000, 3, None), 1),
        ask(8_000, 4, None),
        woke(refused(9_000, 4, None), 2),
    ]
}

#[test]
fn semaphore_utilisation_is_time_weighted_holders_over_permits() {
    let events = Events::from(semaphore_history());
    let cell = window(0, 10_000, LockKind::Semaphore { permits: 2 });
    let f = super::semaphore::figures(&events, &events.sections(), &cell, Some(1.5));
    // 1 holder for 900 µs, 2 for 1 000, 3 for 1 000, 2 for 1 100, 1 for 1 900, 0 for 1 000,
    // 1 for 3 000: 13 000 holder-µs over 10 000 µs = 1.3 holders, 0.65 of 2 permits.
    assert_eq!(f.permits, 2);
    assert!((f.utilisation - 0.65).abs() < 1e-12, "{f:?}");
    assert_eq!(f.holders_max, 3);
    assert_eq!(f.wakeups_per_grant, Some(1.5));
    // Without the third holder the semaphore never went over its permits.
    let safe: Vec<Event> = semaphore_history()
        .into_iter()
        .filter(|e| e.client() != Some(2))
        .collect();
    let events = Events::from(safe);
    let f = super::semaphore::figures(&events, &events.sections(), &cell, None);
    // 900 + 2 × 2 000 + 1 100 + 3 000 = 9 000 holder-µs: 0.9 holders, 0.45 of 2.
    assert!((f.utilisation - 0.45).abs() < 1e-12, "{f:?}");
    assert_eq!((f.holders_max, f.wakeups_per_grant), (2, None));
}

#[test]
fn try_lock_attempts_count_every_outcome_in_the_window_and_no_re_entry() {
    let mut reentry = ask(1_100, 1, None);
    reentry.depth = Some(2);
    let mut inner = grant(1_100, 1, None);
    inner.depth = Some(2);
    let history = vec![
        ask(500, 0, None), // in the warm-up
        grant(600, 0, None),
        ask(1_000, 1, None),
        grant(1_010, 1, None),
        reentry,
        inner,
        ask(1_200, 2, None),
        refused(1_200, 2, None),
        ask(1_300, 3, None),
        refused(1_300, 3, None),
        ask(2_000, 4, None), // never answered
    ];
    let events = Events::from(history);
    let cell = window(1_000, 3_000, LockKind::Mutex);
    let f = super::try_lock::figures(&events, &events.operations(), &cell);
    assert_eq!((f.attempts, f.granted), (4, 1));
    assert_eq!(f.success_rate, Some(0.25));
    let none = Events::from(vec![grant(2_000, 1, None)]);
    let f = super::try_lock::figures(&none, &none.operations(), &cell);
    assert_eq!((f.attempts, f.success_rate), (0, None));
}
