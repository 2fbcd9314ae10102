//! A history held compactly: what checkers and statistics read instead of a `Vec<Event>`.
//!
//! An [`Event`] is about 280 bytes in memory (a `String` key and a dozen `Option<u64>`s), so a
//! 10 M-event history took 2.8 GB before any checker started. Here each event is a 24-byte row
//! (time, process, interned key, kind, op, and a bit per optional field present) and the
//! optional fields it has are packed, 8 bytes each, in one shared pool, in a fixed field order;
//! keys, error texts, fault names and target lists are stored once. A grant with a token, a TTL
//! and a request count takes 48 bytes, a release invoke 24.
//!
//! [`EventRef`] reads one event's fields back; [`EventRef::to_event`] rebuilds the `Event`
//! exactly, so the store loses nothing (see the round-trip test).

use rustc_hash::FxHashMap as HashMap;

use super::{ErrorKind, Event, EventKind, Mode, Op, Process};

/// The optional fields, by their bit in a row's `bits` (and their order in the pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Field {
    Token,
    Wakeups,
    Requests,
    FallbackPolls,
    QueuePosition,
    IntendedUs,
    HoldUs,
    ThinkUs,
    TtlMs,
    Value,
    /// An interned string's id.
    Error,
    /// `ErrorKind` as its index in [`ERROR_KINDS`].
    ErrorKind,
    /// An interned string's id.
    Fault,
    /// An interned target list's id.
    Targets,
    EffectUs,
    UndoUs,
    /// An interned string's id.
    Effect,
    /// [`Mode`] as its index in [`MODES`].
    Mode,
    Depth,
    Slot,
}

/// A row's `bits`: a bit per [`Field`] present (the low [`FIELDS`] bits), the nemesis bit, the
/// kind (2 bits) and the op (3 bits).
const FIELDS: u32 = 20;
const FIELD_BITS: u32 = (1 << FIELDS) - 1;
const _: () = assert!(Field::Slot as u32 + 1 == FIELDS && FIELDS <= 20);
/// Set for the nemesis (its process is no client index).
const NEMESIS: u32 = 1 << 20;
const KIND_SHIFT: u32 = 21;
const OP_SHIFT: u32 = 24;

const ERROR_KINDS: [ErrorKind; 8] = [
    ErrorKind::Timeout,
    ErrorKind::Connection,
    ErrorKind::Lost,
    ErrorKind::Unsupported,
    ErrorKind::Server,
    ErrorKind::Stale,
    ErrorKind::Withdrawn,
    ErrorKind::Unavailable,
];
const MODES: [Mode; 2] = [Mode::Read, Mode::Write];
const KINDS: [EventKind; 4] = [
    EventKind::Invoke,
    EventKind::Ok,
    EventKind::Fail,
    EventKind::Info,
];
const OPS: [Op; 6] = [
    Op::Acquire,
    Op::Release,
    Op::LeaseLost,
    Op::Fault,
    Op::Read,
    Op::Write,
];

fn index_of<T: PartialEq>(all: &[T], x: &T) -> u8 {
    all.iter()
        .position(|y| y == x)
        .expect("every variant is listed") as u8
}

/// One event, fixed-size: 24 bytes.
#[derive(Debug, Clone, Copy)]
struct Row {
    t_us: u64,
    /// Where this event's present optional fields start in the pool.
    extra: u32,
    /// The client index (unused for the nemesis).
    process: u32,
    key: u32,
    /// Fields present, nemesis, kind and op (see [`FIELDS`]).
    bits: u32,
}

impl Row {
    fn has(&self, f: Field) -> bool {
        self.bits & (1 << f as u32) != 0
    }
}

/// Strings stored once, by id.
#[derive(Debug, Clone, Default)]
struct Interner {
    all: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = u32::try_from(self.all.len()).expect("fewer than 2^32 distinct strings");
        self.all.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }
}

/// A history's events, compactly (see the module doc), in the order they were pushed.
#[derive(Debug, Clone, Default)]
pub struct Events {
    rows: Vec<Row>,
    pool: Vec<u64>,
    strings: Interner,
    targets: Vec<Vec<String>>,
    target_ids: HashMap<Vec<String>, u32>,
}

impl Events {
    /// No events.
    pub fn new() -> Events {
        Events::default()
    }

    /// How many events.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Adds `e` at the end.
    pub fn push(&mut self, e: &Event) {
        // Every field named, so a field added to `Event` cannot be dropped here unnoticed.
        let Event {
            t_us,
            process,
            kind,
            op,
            key,
            token,
            wakeups,
            requests,
            fallback_polls,
            queue_position,
            intended_us,
            hold_us,
            think_us,
            ttl_ms,
            value,
            error,
            error_kind,
            fault,
            targets,
            effect_us,
            undo_us,
            effect,
            mode,
            depth,
            slot,
        } = e;
        // Ids first: interning needs `self` while the closure below holds the pool.
        let mut string = |s: &Option<String>| s.as_deref().map(|s| u64::from(self.strings.id(s)));
        let (error, fault, effect) = (string(error), string(fault), string(effect));
        let targets = targets.as_ref().map(|t| u64::from(self.target_id(t)));
        let key = self.strings.id(key);
        let extra = u32::try_from(self.pool.len()).expect("fewer than 2^32 optional fields");
        let mut bits = u32::from(index_of(&KINDS, kind)) << KIND_SHIFT
            | u32::from(index_of(&OPS, op)) << OP_SHIFT;
        let pool = &mut self.pool;
        let mut put = |f: Field, v: Option<u64>| {
            if let Some(v) = v {
                bits |= 1 << f as u32;
                pool.push(v);
            }
        };
        // In `Field` order: `slot` counts the fields before one to find it.
        put(Field::Token, *token);
        put(Field::Wakeups, *wakeups);
        put(Field::Requests, *requests);
        put(Field::FallbackPolls, *fallback_polls);
        put(Field::QueuePosition, *queue_position);
        put(Field::IntendedUs, *intended_us);
        put(Field::HoldUs, *hold_us);
        put(Field::ThinkUs, *think_us);
        put(Field::TtlMs, *ttl_ms);
        put(Field::Value, *value);
        put(Field::Error, error);
        put(
            Field::ErrorKind,
            error_kind.map(|k| u64::from(index_of(&ERROR_KINDS, &k))),
        );
        put(Field::Fault, fault);
        put(Field::Targets, targets);
        put(Field::EffectUs, *effect_us);
        put(Field::UndoUs, *undo_us);
        put(Field::Effect, effect);
        put(Field::Mode, mode.map(|m| u64::from(index_of(&MODES, &m))));
        put(Field::Depth, *depth);
        put(Field::Slot, *slot);
        let process = match process {
            Process::Client(c) => *c,
            Process::Nemesis(_) => {
                bits |= NEMESIS;
                0
            }
        };
        self.rows.push(Row {
            t_us: *t_us,
            extra,
            process,
            key,
            bits,
        });
    }

    fn target_id(&mut self, t: &[String]) -> u32 {
        if let Some(&id) = self.target_ids.get(t) {
            return id;
        }
        let id = u32::try_from(self.targets.len()).expect("fewer than 2^32 target lists");
        self.targets.push(t.to_vec());
        self.target_ids.insert(t.to_vec(), id);
        id
    }

    /// Moves every event of `other` to the end of `self` (strings and target lists are
    /// re-interned, so the two stores need not share ids).
    pub fn append(&mut self, other: Events) {
        let strings: Vec<u64> = (other.strings.all.iter())
            .map(|s| u64::from(self.strings.id(s)))
            .collect();
        let targets: Vec<u64> = (other.targets.iter())
            .map(|t| u64::from(self.target_id(t)))
            .collect();
        let base = u32::try_from(self.pool.len()).expect("fewer than 2^32 optional fields");
        self.pool.extend_from_slice(&other.pool);
        self.rows.reserve_exact(other.rows.len());
        for mut r in other.rows {
            r.extra += base;
            r.key = strings[r.key as usize] as u32;
            // The ids a row keeps in the pool are renumbered there.
            for (f, ids) in [
                (Field::Error, &strings),
                (Field::Fault, &strings),
                (Field::Effect, &strings),
                (Field::Targets, &targets),
            ] {
                if r.has(f) {
                    let at = slot(r, f);
                    self.pool[at] = ids[self.pool[at] as usize];
                }
            }
            self.rows.push(r);
        }
    }

    /// Event `i`.
    pub fn at(&self, i: usize) -> EventRef<'_> {
        EventRef {
            events: self,
            row: self.rows[i],
        }
    }

    /// Every event, in order.
    pub fn iter(&self) -> impl Iterator<Item = EventRef<'_>> + '_ {
        self.rows.iter().map(|&row| EventRef { events: self, row })
    }

    /// Event `i`'s time, µs.
    pub fn t_us(&self, i: usize) -> u64 {
        self.rows[i].t_us
    }

    /// Swaps events `a` and `b` (their optional fields stay where they are in the pool).
    pub fn swap(&mut self, a: usize, b: usize) {
        self.rows.swap(a, b);
    }

    /// Bytes held, roughly: rows, pool and stored strings (for the benchmark's report).
    pub fn bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<Row>()
            + self.pool.capacity() * 8
            + self
                .strings
                .all
                .iter()
                .map(|s| s.len() * 2 + 40)
                .sum::<usize>()
    }
}

/// Where field `f` of `r` (which has it) stands in the pool.
fn slot(r: Row, f: Field) -> usize {
    let before = r.bits & FIELD_BITS & ((1 << f as u32) - 1);
    r.extra as usize + before.count_ones() as usize
}

impl From<&[Event]> for Events {
    fn from(events: &[Event]) -> Events {
        let mut out = Events::new();
        out.rows.reserve_exact(events.len());
        for e in events {
            out.push(e);
        }
        out
    }
}

impl From<Vec<Event>> for Events {
    fn from(events: Vec<Event>) -> Events {
        Events::from(&events[..])
    }
}

/// One event of an [`Events`], read field by field.
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a> {
    events: &'a Events,
    row: Row,
}

impl<'a> EventRef<'a> {
    fn get(&self, f: Field) -> Option<u64> {
        self.row.has(f).then(|| self.events.pool[slot(self.row, f)])
    }
    fn string(&self, f: Field) -> Option<&'a str> {
        self.get(f).map(|id| &*self.events.strings.all[id as usize])
    }

    /// [`Event::t_us`].
    pub fn t_us(&self) -> u64 {
        self.row.t_us
    }
    /// [`Event::process`].
    pub fn process(&self) -> Process {
        if self.row.bits & NEMESIS != 0 {
            Process::NEMESIS
        } else {
            Process::Client(self.row.process)
        }
    }
    /// The client that acted, `None` for the nemesis ([`Event::client`]).
    pub fn client(&self) -> Option<u32> {
        (self.row.bits & NEMESIS == 0).then_some(self.row.process)
    }
    /// [`Event::kind`].
    pub fn kind(&self) -> EventKind {
        KINDS[(self.row.bits >> KIND_SHIFT & 0b11) as usize]
    }
    /// [`Event::op`].
    pub fn op(&self) -> Op {
        OPS[(self.row.bits >> OP_SHIFT & 0b111) as usize]
    }
    /// [`Event::key`].
    pub fn key(&self) -> &'a str {
        &self.events.strings.all[self.row.key as usize]
    }
    /// [`Event::token`].
    pub fn token(&self) -> Option<u64> {
        self.get(Field::Token)
    }
    /// [`Event::wakeups`].
    pub fn wakeups(&self) -> Option<u64> {
        self.get(Field::Wakeups)
    }
    /// [`Event::requests`].
    pub fn requests(&self) -> Option<u64> {
        self.get(Field::Requests)
    }
    /// [`Event::fallback_polls`].
    pub fn fallback_polls(&self) -> Option<u64> {
        self.get(Field::FallbackPolls)
    }
    /// [`Event::queue_position`].
    pub fn queue_position(&self) -> Option<u64> {
        self.get(Field::QueuePosition)
    }
    /// [`Event::intended_us`].
    pub fn intended_us(&self) -> Option<u64> {
        self.get(Field::IntendedUs)
    }
    /// [`Event::hold_us`].
    pub fn hold_us(&self) -> Option<u64> {
        self.get(Field::HoldUs)
    }
    /// [`Event::think_us`].
    pub fn think_us(&self) -> Option<u64> {
        self.get(Field::ThinkUs)
    }
    /// [`Event::ttl_ms`].
    pub fn ttl_ms(&self) -> Option<u64> {
        self.get(Field::TtlMs)
    }
    /// [`Event::value`].
    pub fn value(&self) -> Option<u64> {
        self.get(Field::Value)
    }
    /// [`Event::error`].
    pub fn error(&self) -> Option<&'a str> {
        self.string(Field::Error)
    }
    /// [`Event::error_kind`].
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.get(Field::ErrorKind).map(|k| ERROR_KINDS[k as usize])
    }
    /// [`Event::fault`].
    pub fn fault(&self) -> Option<&'a str> {
        self.string(Field::Fault)
    }
    /// [`Event::targets`].
    pub fn targets(&self) -> Option<&'a [String]> {
        self.get(Field::Targets)
            .map(|id| &self.events.targets[id as usize][..])
    }

    /// [`Event::effect_us`].
    pub fn effect_us(&self) -> Option<u64> {
        self.get(Field::EffectUs)
    }
    /// [`Event::undo_us`].
    pub fn undo_us(&self) -> Option<u64> {
        self.get(Field::UndoUs)
    }
    /// [`Event::effect`].
    pub fn effect(&self) -> Option<&'a str> {
        self.string(Field::Effect)
    }

    /// [`Event::mode`].
    pub fn mode(&self) -> Option<Mode> {
        self.get(Field::Mode).map(|m| MODES[m as usize])
    }
    /// [`Event::depth`].
    pub fn depth(&self) -> Option<u64> {
        self.get(Field::Depth)
    }
    /// [`Event::slot`].
    pub fn slot(&self) -> Option<u64> {
        self.get(Field::Slot)
    }

    /// The event as an [`Event`], every field as it was pushed.
    pub fn to_event(&self) -> Event {
        // Every field named (no `..`), so a field added to `Event` must be added here.
        Event {
            t_us: self.t_us(),
            process: self.process(),
            kind: self.kind(),
            op: self.op(),
            key: self.key().to_string(),
            token: self.token(),
            wakeups: self.wakeups(),
            requests: self.requests(),
            fallback_polls: self.fallback_polls(),
            queue_position: self.queue_position(),
            intended_us: self.intended_us(),
            hold_us: self.hold_us(),
            think_us: self.think_us(),
            ttl_ms: self.ttl_ms(),
            value: self.value(),
            error: self.error().map(str::to_string),
            error_kind: self.error_kind(),
            fault: self.fault().map(str::to_string),
            targets: self.targets().map(<[String]>::to_vec),
            effect_us: self.effect_us(),
            undo_us: self.undo_us(),
            effect: self.effect().map(str::to_string),
            mode: self.mode(),
            depth: self.depth(),
            slot: self.slot(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events using every field, with keys, errors, faults and targets repeated and not.
    fn varied() -> Vec<Event> {
        let mut out = Vec::new();
        for i in 0..200u64 {
            let mut e = Event::new(
                i * 7 % 50,
                (i % 5) as u32,
                KINDS[i as usize % 4],
                OPS[i as usize % 6],
                format!("k{}", i % 3),
            );
            let some = |n: u64| (i % n == 0).then_some(i * 1_000_003 + n);
            (e.token, e.wakeups, e.requests, e.fallback_polls) =
                (some(2), some(3), some(4), some(5));
            (e.queue_position, e.intended_us, e.hold_us, e.think_us) =
                (some(6), some(7), some(8), some(9));
            (e.ttl_ms, e.value) = (some(10), some(11));
            (e.depth, e.slot) = (some(12), some(14));
            e.mode = [None, Some(Mode::Read), Some(Mode::Write)][i as usize % 3];
            e.error = (i % 4 == 1).then(|| format!("error {}", i % 6));
            e.error_kind = (i % 3 == 1).then_some(ERROR_KINDS[i as usize % 8]);
            if i % 13 == 0 {
                e = Event::fault(
                    i,
                    KINDS[i as usize % 4],
                    ["kill", "pause"][i as usize % 2],
                    (0..i % 4).map(|n| format!("n{n}")).collect(),
                );
                e.error = (i % 2 == 0).then(|| "start: failed".to_string());
                (e.effect_us, e.undo_us) =
                    ((i % 3 == 0).then_some(i + 1), (i % 5 == 0).then_some(i + 9));
                e.effect = (i % 4 == 0).then(|| format!("partial: n{} refused", i % 3));
            }
            out.push(e);
        }
        out.push(Event::new(
            u64::MAX,
            u32::MAX,
            EventKind::Ok,
            Op::Acquire,
            "",
        ));
        out
    }

    #[test]
    fn every_event_reads_back_as_it_was_pushed() {
        let events = varied();
        let store = Events::from(&events[..]);
        assert_eq!(store.len(), events.len());
        let back: Vec<Event> = store.iter().map(|e| e.to_event()).collect();
        assert_eq!(back, events);
        assert_eq!(store.at(200).client(), Some(u32::MAX));
        assert_eq!(
            store.at(0).client(),
            None,
            "event 0 is a fault, the nemesis'"
        );
        assert_eq!(std::mem::size_of::<Row>(), 24);
    }

    #[test]
    fn appended_stores_keep_their_strings_and_targets() {
        let events = varied();
        // The second half interns its strings in another order, so its ids all differ.
        let (a, b) = events.split_at(77);
        let mut b_rev: Vec<Event> = b.to_vec();
        b_rev.reverse();
        let mut store = Events::from(a);
        let second = Events::from(&b_rev[..]);
        store.append(second);
        let mut want = a.to_vec();
        want.extend(b_rev);
        let back: Vec<Event> = store.iter().map(|e| e.to_event()).collect();
        assert_eq!(back, want);
    }

    #[test]
    fn swapped_events_keep_their_own_fields() {
        let events = varied();
        let mut store = Events::from(&events[..]);
        store.swap(1, 40);
        assert_eq!(store.at(1).to_event(), events[40]);
        assert_eq!(store.at(40).to_event(), events[1]);
    }
}
