//! A history read as operations (each invoke paired with its outcome) and critical sections
//! (a grant to the same client's release), the shapes statistics and checkers fold over.

use rustc_hash::FxHashMap as HashMap;

use super::{Event, EventKind, Events, Op, Process};

/// One invocation and what became of it. Indices point into the event slice it was read from
/// (line `i + 1` of a `history.jsonl` written by the recorder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// Who invoked it.
    pub process: Process,
    /// What was invoked.
    pub op: Op,
    /// The invoke event.
    pub invoke: usize,
    /// The outcome event (`ok`, `fail` or `info`); `None` when the history ended first.
    pub outcome: Option<usize>,
}

impl Operation {
    /// The outcome's kind, `None` while open.
    pub fn outcome_kind(&self, events: &Events) -> Option<EventKind> {
        self.outcome.map(|i| events.at(i).kind())
    }
}

/// What pairing found, beside the operations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Operations {
    /// In invoke order.
    pub ops: Vec<Operation>,
    /// Outcome events with no open invoke of the same process and op (a damaged history).
    pub unmatched: Vec<usize>,
}

/// Event indices in time order, as [`in_time_order`] gives them.
#[derive(Debug, Clone)]
pub struct TimeOrder(Order);

#[derive(Debug, Clone)]
enum Order {
    /// The events are in time order already: no list is built.
    Sorted(std::ops::Range<usize>),
    Permuted(std::vec::IntoIter<u32>),
}

impl Iterator for TimeOrder {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        match &mut self.0 {
            Order::Sorted(r) => r.next(),
            Order::Permuted(p) => p.next().map(|i| i as usize),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Order::Sorted(r) => r.size_hint(),
            Order::Permuted(p) => p.size_hint(),
        }
    }
}

impl ExactSizeIterator for TimeOrder {}

/// Event indices in time order; events of one time keep their file order. Worker processes
/// stream their events to one recorder, so the file is in arrival order, which may differ.
pub fn in_time_order(events: &Events) -> TimeOrder {
    let n = events.len();
    // Every checker asks; a history put in time order once ([`into_time_order`]) costs a scan
    // and no list.
    if (1..n).all(|i| events.t_us(i - 1) <= events.t_us(i)) {
        return TimeOrder(Order::Sorted(0..n));
    }
    // Sorting (time, index) pairs keeps file order on ties, as a stable sort would, without
    // reaching into the events on every comparison.
    let mut keyed: Vec<(u64, u32)> = (0..n)
        .map(|i| {
            (
                events.t_us(i),
                u32::try_from(i).expect("fewer than 2^32 events"),
            )
        })
        .collect();
    keyed.sort_unstable();
    let order: Vec<u32> = keyed.into_iter().map(|(_, i)| i).collect();
    TimeOrder(Order::Permuted(order.into_iter()))
}

/// Puts `events` in time order in place (stably, as [`in_time_order`]), carrying `lines` (each
/// event's line in the file) along, so every later reader finds them sorted.
pub fn into_time_order(events: &mut Events, lines: &mut [usize]) {
    let TimeOrder(Order::Permuted(order)) = in_time_order(events) else {
        return;
    };
    let order = order.as_slice();
    // Follow each cycle of the permutation: slot `at` takes the event from `order[at]`.
    let mut placed = vec![false; order.len()];
    for start in 0..order.len() {
        let mut at = start;
        while !placed[at] {
            placed[at] = true;
            let from = order[at] as usize;
            if from == start {
                break;
            }
            events.swap(at, from);
            lines.swap(at, from);
            at = from;
        }
    }
}

/// [`Events::operations`] of events held as `Event`s.
pub fn operations(events: &[Event]) -> Operations {
    Events::from(events).operations()
}

/// [`Events::critical_sections`] of events held as `Event`s.
pub fn critical_sections(events: &[Event]) -> Vec<CriticalSection> {
    Events::from(events).critical_sections()
}

impl Events {
    /// Pairs every `invoke` with the next outcome (in time) of the same process and op.
    /// Single events (`lease_lost`, `read`, `write`: [`Op::is_single`]) are not operations and are
    /// left out.
    pub fn operations(&self) -> Operations {
        let events = self;
        let mut open: HashMap<(Process, Op), usize> = HashMap::default();
        let mut out = Operations::default();
        for i in in_time_order(events) {
            let e = events.at(i);
            if e.op().is_single() {
                continue;
            }
            if e.kind() == EventKind::Invoke {
                // An invoke while one is open means the earlier one never finished: it stays open.
                open.insert((e.process(), e.op()), out.ops.len());
                out.ops.push(Operation {
                    process: e.process(),
                    op: e.op(),
                    invoke: i,
                    outcome: None,
                });
            } else {
                match open.remove(&(e.process(), e.op())) {
                    Some(k) => out.ops[k].outcome = Some(i),
                    None => out.unmatched.push(i),
                }
            }
        }
        out
    }

    /// Every critical section, in grant order (by time, whatever the order of the file).
    ///
    /// Sections are paired per acquisition: each acquire `ok` of a client on a key opens one, and
    /// each release `invoke` of that client on that key closes the latest one still open (a
    /// reentrant lock granted twice is released twice, innermost first). A `lease_lost` marks every
    /// open section of the client on that key: a lease is lost whole, however often it was taken.
    pub fn critical_sections(&self) -> Vec<CriticalSection> {
        self.sections().iter().map(|s| s.spelled(self)).collect()
    }

    /// [`Events::critical_sections`] as event indices, 16 bytes a section (what checkers keep for
    /// millions of holds).
    pub fn sections(&self) -> Vec<Section> {
        let events = self;
        let mut open: HashMap<(u32, &str), Vec<usize>> = HashMap::default();
        let mut out: Vec<Section> = Vec::new();
        for i in in_time_order(events) {
            let e = events.at(i);
            let Some(client) = e.client() else {
                continue;
            };
            match (e.op(), e.kind()) {
                (Op::Acquire, EventKind::Ok) => {
                    open.entry((client, e.key())).or_default().push(out.len());
                    out.push(Section {
                        client,
                        acquired: index(i),
                        released: NONE,
                        lost: NONE,
                    });
                }
                (Op::LeaseLost, _) => {
                    // Sections whose signal is already set are a prefix of the stack (they were
                    // open at an earlier signal), so walking back from the top stops early.
                    for &k in open.get(&(client, e.key())).into_iter().flatten().rev() {
                        if out[k].lost != NONE {
                            break;
                        }
                        out[k].lost = index(i);
                    }
                }
                (Op::Release, EventKind::Invoke) => {
                    if let Some(k) = open.get_mut(&(client, e.key())).and_then(Vec::pop) {
                        out[k].released = index(i);
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// No event (in [`Section`]'s indices).
const NONE: u32 = u32::MAX;

fn index(i: usize) -> u32 {
    u32::try_from(i)
        .ok()
        .filter(|&i| i != NONE)
        .expect("fewer than 2^32 - 1 events")
}

fn some(i: u32) -> Option<usize> {
    (i != NONE).then_some(i as usize)
}

/// A critical section as the indices of its events ([`CriticalSection`] has every field
/// spelled out); the rest is read from the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// The holder.
    pub client: u32,
    acquired: u32,
    released: u32,
    lost: u32,
}

impl Section {
    /// The acquire `ok`'s index.
    pub fn acquired_at(&self) -> usize {
        self.acquired as usize
    }
    /// The release `invoke`'s index; `None` if the history ended first.
    pub fn released_at(&self) -> Option<usize> {
        some(self.released)
    }
    /// The `lease_lost` event's index, if the holder was told.
    pub fn lost_at(&self) -> Option<usize> {
        some(self.lost)
    }
    /// Acquire `ok` time, µs.
    pub fn acquired_us(&self, events: &Events) -> u64 {
        events.t_us(self.acquired_at())
    }
    /// Release `invoke` time, µs.
    pub fn released_us(&self, events: &Events) -> Option<u64> {
        self.released_at().map(|i| events.t_us(i))
    }
    /// When the holder was told its lease was lost, µs.
    pub fn lost_us(&self, events: &Events) -> Option<u64> {
        self.lost_at().map(|i| events.t_us(i))
    }
    /// The lock key.
    pub fn key<'a>(&self, events: &'a Events) -> &'a str {
        events.at(self.acquired_at()).key()
    }
    /// The fencing token granted with it.
    pub fn token(&self, events: &Events) -> Option<u64> {
        events.at(self.acquired_at()).token()
    }
    /// The lease TTL (or validity) the holder was given, ms.
    pub fn ttl_ms(&self, events: &Events) -> Option<u64> {
        events.at(self.acquired_at()).ttl_ms()
    }
    /// Every field spelled out.
    pub fn spelled(&self, events: &Events) -> CriticalSection {
        CriticalSection {
            client: self.client,
            key: self.key(events).to_string(),
            token: self.token(events),
            ttl_ms: self.ttl_ms(events),
            acquired_us: self.acquired_us(events),
            acquired_at: self.acquired_at(),
            released_us: self.released_us(events),
            released_at: self.released_at(),
            lost_us: self.lost_us(events),
            lost_at: self.lost_at(),
        }
    }
}

/// A client's hold of a lock: from its acquire `ok` to its release `invoke` (the inner bounds
/// of the time it held the lock, so two sections that overlap certainly overlapped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalSection {
    /// The holder.
    pub client: u32,
    /// The lock key.
    pub key: String,
    /// The fencing token granted with it.
    pub token: Option<u64>,
    /// The lease TTL (or validity) the holder was given, ms.
    pub ttl_ms: Option<u64>,
    /// Acquire `ok` time, µs, and its event index.
    pub acquired_us: u64,
    pub acquired_at: usize,
    /// Release `invoke` time, µs, and its event index; `None` if the history ended first (the
    /// section is open to the end).
    pub released_us: Option<u64>,
    pub released_at: Option<usize>,
    /// When the holder was told its lease was lost (`lease_lost`), if it was, and that event.
    pub lost_us: Option<u64>,
    pub lost_at: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Event;

    fn ev(t: u64, c: u32, kind: EventKind, op: Op) -> Event {
        Event::new(t, c, kind, op, "k")
    }

    #[test]
    fn invokes_pair_with_their_outcomes_and_strays_are_named() {
        use EventKind::*;
        let h = vec![
            ev(0, 0, Invoke, Op::Acquire),
            ev(1, 1, Invoke, Op::Acquire),
            ev(2, 0, Ok, Op::Acquire),
            ev(3, 0, Info, Op::LeaseLost),
            ev(4, 0, Invoke, Op::Release),
            ev(5, 0, Ok, Op::Release),
            ev(6, 2, Fail, Op::Acquire),
            Event::fault(7, Invoke, "kill", vec!["n1".into()]),
            Event::fault(8, Ok, "kill", vec!["n1".into()]),
        ];
        let o = operations(&h);
        let pairs: Vec<(usize, Option<usize>)> =
            o.ops.iter().map(|x| (x.invoke, x.outcome)).collect();
        assert_eq!(pairs, [(0, Some(2)), (1, None), (4, Some(5)), (7, Some(8))]);
        assert_eq!(o.unmatched, [6]);
        assert_eq!(o.ops[3].process, Process::NEMESIS);
        assert_eq!(o.ops[0].outcome_kind(&Events::from(h)), Some(Ok));
    }

    #[test]
    fn sections_run_from_grant_to_release_invoke_with_the_lost_signal() {
        use EventKind::*;
        let mut g0 = ev(10, 0, Ok, Op::Acquire);
        (g0.token, g0.ttl_ms) = (Some(5), Some(2000));
        let mut g1 = ev(40, 1, Ok, Op::Acquire);
        g1.token = Some(6);
        let h = vec![
            ev(0, 0, Invoke, Op::Acquire),
            g0,
            ev(20, 1, Invoke, Op::Acquire),
            ev(30, 0, Info, Op::LeaseLost),
            g1,
            ev(50, 0, Invoke, Op::Release),
            ev(60, 0, Ok, Op::Release),
        ];
        let s = critical_sections(&h);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (
                s[0].client,
                s[0].token,
                s[0].ttl_ms,
                s[0].acquired_us,
                s[0].released_us
            ),
            (0, Some(5), Some(2000), 10, Some(50))
        );
        assert_eq!((s[0].lost_us, s[0].lost_at), (Some(30), Some(3)));
        assert_eq!((s[0].acquired_at, s[0].released_at), (1, Some(5)));
        assert_eq!(
            (s[1].client, s[1].released_us, s[1].lost_us),
            (1, None, None)
        );
        // A worker's events may reach the file late: the same sections come out.
        let mut shuffled = h.clone();
        shuffled.swap(1, 4);
        let again = critical_sections(&shuffled);
        assert_eq!((again[0].client, again[0].acquired_at), (0, 4));
        assert_eq!((again[1].client, again[1].acquired_at), (1, 1));
        assert_eq!(again[0].released_us, Some(50));
    }

    #[test]
    fn each_acquisition_pairs_with_one_release_innermost_first() {
        use EventKind::*;
        // Client 0 is granted k twice (10, 20) and releases twice (30, 40); the lost signal at
        // 25 marks both; client 1's release of another key closes nothing of client 0's.
        let h = vec![
            ev(0, 0, Invoke, Op::Acquire),
            ev(10, 0, Ok, Op::Acquire),
            ev(15, 0, Invoke, Op::Acquire),
            ev(20, 0, Ok, Op::Acquire),
            ev(25, 0, Info, Op::LeaseLost),
            Event::new(27, 0, Invoke, Op::Release, "other"),
            ev(30, 0, Invoke, Op::Release),
            ev(35, 0, Ok, Op::Release),
            ev(40, 0, Invoke, Op::Release),
            ev(45, 0, Ok, Op::Release),
        ];
        let s = critical_sections(&h);
        let got: Vec<_> = s
            .iter()
            .map(|x| (x.acquired_us, x.released_us, x.lost_us))
            .collect();
        assert_eq!(
            got,
            [(10, Some(40), Some(25)), (20, Some(30), Some(25))],
            "the later grant is released first; neither is open to the end"
        );
        assert_eq!((s[0].released_at, s[1].released_at), (Some(8), Some(6)));
    }

    #[test]
    fn a_history_put_in_time_order_carries_its_lines() {
        use EventKind::*;
        // Times by file line: 30, 10, 20, 10, 40, 0: sorted stably, the two 10s keep their order.
        let times = [30, 10, 20, 10, 40, 0];
        let h: Vec<Event> = times
            .iter()
            .enumerate()
            .map(|(c, &t)| Event::new(t, c as u32, Invoke, Op::Acquire, "k"))
            .collect();
        let mut lines: Vec<usize> = (1..=6).collect();
        let mut h = Events::from(h);
        into_time_order(&mut h, &mut lines);
        let got: Vec<(u64, u32)> = h.iter().map(|e| (e.t_us(), e.client().unwrap())).collect();
        assert_eq!(got, [(0, 5), (10, 1), (10, 3), (20, 2), (30, 0), (40, 4)]);
        assert_eq!(lines, [6, 2, 4, 3, 1, 5]);
        assert_eq!(in_time_order(&h).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
    }
}
