//! Hand-made histories for the checkers' tests: one short constructor per kind of event.

use super::{Checker, History, Verdict};
use crate::history::{ErrorKind, Event, EventKind, Mode, Op};
pub use crate::results::testkit::cell;
use crate::results::{CellInfo, LockKind};

/// Runs `checker` on `events` (lines 1.. in this order).
pub fn run(checker: &dyn Checker, events: Vec<Event>) -> Verdict {
    checker.check(&History::new(events), &cell(4))
}

/// Runs `checker` on `events` (lines 1.. in this order) in a cell whose clients took `lock`.
pub fn run_kind(checker: &dyn Checker, events: Vec<Event>, lock: LockKind) -> Verdict {
    let cell = CellInfo { lock, ..cell(4) };
    checker.check(&History::new(events), &cell)
}

/// `e` (an acquire event) asking to read a read-write lock.
pub fn reading(mut e: Event) -> Event {
    e.mode = Some(Mode::Read);
    e
}

/// `e` (an acquire event) asking to write a read-write lock.
pub fn writing(mut e: Event) -> Event {
    e.mode = Some(Mode::Write);
    e
}

/// `e` (an acquire `ok` or a release `invoke`) at hold depth `depth` of a reentrant lock.
pub fn at_depth(mut e: Event, depth: u64) -> Event {
    e.depth = Some(depth);
    e
}

/// The count `name` of `v` (0 when absent, so a missing count fails an `== n` with n > 0).
pub fn count(v: &Verdict, name: &str) -> u64 {
    v.counts.get(name).unwrap_or(0)
}

fn ev(t: u64, c: u32, kind: EventKind, op: Op, key: &str) -> Event {
    Event::new(t, c, kind, op, key)
}
/// Client `c` asks for `key`.
pub fn invoke(t: u64, c: u32, key: &str) -> Event {
    ev(t, c, EventKind::Invoke, Op::Acquire, key)
}
/// Client `c` is granted `key` with `token` and a lease of `ttl_ms`.
pub fn grant(t: u64, c: u32, key: &str, token: u64, ttl_ms: u64) -> Event {
    let mut e = ev(t, c, EventKind::Ok, Op::Acquire, key);
    (e.token, e.ttl_ms) = (Some(token), Some(ttl_ms));
    e
}
/// Client `c`'s acquisition ends unknown.
pub fn info(t: u64, c: u32, key: &str) -> Event {
    let mut e = ev(t, c, EventKind::Info, Op::Acquire, key);
    e.error_kind = Some(ErrorKind::Connection);
    e
}
/// Client `c`'s acquisition times out.
pub fn timeout(t: u64, c: u32, key: &str) -> Event {
    let mut e = ev(t, c, EventKind::Fail, Op::Acquire, key);
    e.error_kind = Some(ErrorKind::Timeout);
    e
}
/// Client `c` starts releasing `key`.
pub fn release(t: u64, c: u32, key: &str) -> Event {
    ev(t, c, EventKind::Invoke, Op::Release, key)
}
/// Client `c` is told its lease on `key` is gone.
pub fn lost(t: u64, c: u32, key: &str) -> Event {
    ev(t, c, EventKind::Info, Op::LeaseLost, key)
}
fn access(t: u64, c: u32, op: Op, kind: EventKind, key: &str, token: u64, value: u64) -> Event {
    let mut e = ev(t, c, kind, op, key);
    (e.token, e.value) = (Some(token), Some(value));
    if kind == EventKind::Fail {
        e.error_kind = Some(ErrorKind::Stale);
    }
    e
}
/// The register accepted client `c`'s read of `value`.
pub fn read(t: u64, c: u32, key: &str, token: u64, value: u64) -> Event {
    access(t, c, Op::Read, EventKind::Ok, key, token, value)
}
/// The register accepted client `c`'s write of `value`.
pub fn write(t: u64, c: u32, key: &str, token: u64, value: u64) -> Event {
    access(t, c, Op::Write, EventKind::Ok, key, token, value)
}
/// The fenced register refused client `c`'s read (stale token).
pub fn stale_read(t: u64, c: u32, key: &str, token: u64) -> Event {
    let mut e = access(t, c, Op::Read, EventKind::Fail, key, token, 0);
    e.value = None;
    e
}
/// The fenced register refused client `c`'s write of `value` (stale token).
pub fn stale_write(t: u64, c: u32, key: &str, token: u64, value: u64) -> Event {
    access(t, c, Op::Write, EventKind::Fail, key, token, value)
}
/// A fault starts (`invoke`) or heals (`ok`).
pub fn fault(t: u64, kind: EventKind) -> Event {
    Event::fault(t, kind, "partition", vec!["n1".into()])
}

/// The fault `fault` on `targets` starts (`invoke`) or ends (`ok`, `info`).
pub fn fault_on(t: u64, kind: EventKind, fault: &str, targets: &[&str]) -> Event {
    Event::fault(
        t,
        kind,
        fault,
        targets.iter().map(|s| s.to_string()).collect(),
    )
}

/// One clean critical section of client `c`: invoke, grant, read `v`, write `v + 1`, release.
pub fn section(t: u64, c: u32, key: &str, token: u64, v: u64) -> Vec<Event> {
    vec![
        invoke(t, c, key),
        grant(t + 10, c, key, token, 1000),
        read(t + 20, c, key, token, v),
        write(t + 80, c, key, token, v + 1),
        release(t + 90, c, key),
    ]
}

/// A checker with a bug: it panics on every history, with the message
/// `index 7 out of range for length 3`.
pub struct Panicking;

impl Checker for Panicking {
    fn name(&self) -> &'static str {
        "panicking"
    }

    fn check(&self, _: &History, _: &CellInfo) -> Verdict {
        panic!("index 7 out of range for length 3");
    }
}
