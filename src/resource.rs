//! The protected resource: a register per lock key that lives outside the lock service (held by
//! the runner, reached by worker processes over their channel), which every critical section
//! reads, holds, and writes back plus one (Jepsen's `lock-set`, Kleppmann's fenced storage).
//! Its accesses land in the history as `read` and `write` events, so the checkers can tell a
//! lost update or a stale access from the data itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::history::{ErrorKind, Event, EventKind, EventSink, Op};
use crate::sync::LockUnpoisoned;

/// Whether the register checks fencing tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceMode {
    /// It remembers the highest token seen (reads and writes alike) and refuses any access with
    /// a lower one.
    #[default]
    Fenced,
    /// It accepts every access (what most lock users have).
    Unfenced,
}

impl ResourceMode {
    /// The name used in workload files and reports.
    pub fn name(self) -> &'static str {
        match self {
            ResourceMode::Fenced => "fenced",
            ResourceMode::Unfenced => "unfenced",
        }
    }
}

/// One access to a register: what a critical section does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessOp {
    /// Read the value.
    Read,
    /// Write a value.
    Write,
    /// Read the value as one of a read-write lock's readers: refused below the fence as any
    /// access is, but it never raises the fence, since readers hold together and their grants
    /// need not reach the register in token order.
    SharedRead,
}

impl AccessOp {
    /// The history op this access is recorded as.
    pub fn op(self) -> Op {
        match self {
            AccessOp::Read | AccessOp::SharedRead => Op::Read,
            AccessOp::Write => Op::Write,
        }
    }
}

/// The fenced register turned an access away: its token is lower than one the key's register
/// had already seen (the accessor's lease was superseded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error(
    "stale token {token} on key {key}: the register has already seen token {highest}, so a \
     later holder has the lock"
)]
pub struct Refused {
    /// The key whose register refused.
    pub key: String,
    /// The token the access carried.
    pub token: u64,
    /// The highest token the register had seen.
    pub highest: u64,
}

/// Per key, which client is in each of a semaphore's slots.
type Pools = FxHashMap<Box<str>, Vec<Option<u32>>>;

/// A key's register: its value and the highest fencing token it has seen.
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    value: u64,
    highest: Option<u64>,
}

/// A key's registers by slot: slot 0 (the one register of every kind but a semaphore) held in
/// place, a semaphore's further slots after it, so a key's first access allocates nothing but
/// its name.
#[derive(Debug, Default)]
struct Slots {
    first: Slot,
    rest: Vec<Slot>,
}

impl Slots {
    /// Slot `index`, made (at 0, unseen) if the key has none that far yet.
    fn get_or_add(&mut self, index: usize) -> &mut Slot {
        if index == 0 {
            return &mut self.first;
        }
        if self.rest.len() < index {
            self.rest.resize(index, Slot::default());
        }
        &mut self.rest[index - 1]
    }
}

/// `key`'s entry in `map`, made by `make` on the key's first access: looked up by `&str`, so an
/// access to a key already seen allocates nothing (an `entry` would need the owned name first).
fn of_key<'m, V>(
    map: &'m mut FxHashMap<Box<str>, V>,
    key: &str,
    make: impl FnOnce() -> V,
) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.into(), make());
    }
    map.get_mut(key).expect("inserted above")
}

/// The protected resource of a cell: one `u64` register per lock key, starting at 0, shared by
/// every client (thread-safe), recording each access into the cell's history.
///
/// Each access is stamped and handed to the history while the register's lock is held, so the
/// history's order of accesses (by `t_us`, and in file order) is the order they took effect.
///
/// A semaphore's cell has one register per permit of each key ([`Register::with_permits`]): a
/// client's read takes the lowest slot no other client is in (the way a holder picks a free
/// resource of a pool of N), and its write leaves it. Only a semaphore that admitted more than
/// N holders leaves a reader no free slot: it then shares slot 0, where the lost-update checker
/// can catch the overlap.
pub struct Register {
    mode: ResourceMode,
    sink: Arc<dyn EventSink>,
    /// Per key, its registers by slot (a semaphore's; the one register of every other kind is
    /// slot 0). Looked up by `&str`: an access to a key already seen allocates nothing. The
    /// keys are the workload's own names, so a fast hash needs no guard against chosen ones
    /// (a run spread over 100 000 keys looks one up twice a cycle).
    slots: Mutex<FxHashMap<Box<str>, Slots>>,
    /// A semaphore's permits, and per key which client is in each slot.
    pools: Option<(u32, Mutex<Pools>)>,
    refused: AtomicU64,
}

impl Register {
    /// Empty registers (every key at 0) in `mode`, recording into `sink`.
    pub fn new(mode: ResourceMode, sink: Arc<dyn EventSink>) -> Register {
        Register {
            mode,
            sink,
            slots: Mutex::new(FxHashMap::default()),
            pools: None,
            refused: AtomicU64::new(0),
        }
    }

    /// One register per permit of each key, for a semaphore of `permits` (see [`Register`]).
    pub fn with_permits(mut self, permits: u32) -> Register {
        self.pools = Some((permits.max(1), Mutex::new(FxHashMap::default())));
        self
    }

    /// The slot `client`'s access to `key` goes to: none without permits; a read leaves any
    /// slot the client was in and takes the lowest free one (slot 0 when none is free); a write
    /// goes to the client's slot and leaves it. Called with the registers' lock held (the lock
    /// order is registers, then pools), so slots change in the order accesses are recorded.
    fn slot_of(&self, client: u32, key: &str, op: AccessOp) -> Option<u64> {
        let (permits, pools) = self.pools.as_ref()?;
        let mut pools = pools.locked();
        let pool = of_key(&mut pools, key, || vec![None; *permits as usize]);
        let mine = pool.iter().position(|c| *c == Some(client));
        if let Some(i) = mine {
            pool[i] = None;
        }
        let slot = match op {
            AccessOp::Read | AccessOp::SharedRead => {
                let free = pool.iter().position(Option::is_none).unwrap_or(0);
                pool[free] = Some(client);
                free
            }
            AccessOp::Write => mine.unwrap_or(0),
        };
        Some(slot as u64)
    }

    /// Whether tokens are checked.
    pub fn mode(&self) -> ResourceMode {
        self.mode
    }

    /// Client `client` reads `key`'s register with fencing token `token`: its value, or the
    /// refusal of the fenced register (the token is lower than one already seen on `key`).
    pub fn read(&self, client: u32, key: &str, token: u64) -> Result<u64, Refused> {
        self.access(client, key, Some(token), AccessOp::Read, 0)
    }

    /// Client `client` writes `value` to `key`'s register with fencing token `token`, unless
    /// the fenced register refuses it (the token is lower than one already seen on `key`).
    pub fn write(&self, client: u32, key: &str, token: u64, value: u64) -> Result<(), Refused> {
        self.access(client, key, Some(token), AccessOp::Write, value)
            .map(|_| ())
    }

    /// [`Register::read`] or [`Register::write`] (`value` is ignored for a read); returns the
    /// value read or written. `token` is `None` for a holder whose lock gives no fencing token
    /// (a library's): its events carry none, and only an unfenced register takes it.
    pub fn access(
        &self,
        client: u32,
        key: &str,
        token: Option<u64>,
        op: AccessOp,
        value: u64,
    ) -> Result<u64, Refused> {
        // The slot is taken and left under the registers' lock, as the access itself: a
        // write that leaves its slot takes effect before a read can take that slot.
        let mut slots = self.slots.locked();
        let slot_no = self.slot_of(client, key, op);
        let index = slot_no.unwrap_or(0) as usize;
        let slot = of_key(&mut slots, key, Slots::default).get_or_add(index);
        let given = token;
        let token = token.unwrap_or(0);
        // A semaphore's slots are taken at the read, not in token order: its registers are
        // not fenced (the semaphore checker judges its holders).
        let fenced = self.mode == ResourceMode::Fenced && self.pools.is_none();
        let stale = match slot.highest {
            Some(highest) if fenced && token < highest => Some(highest),
            _ => None,
        };
        // Stamped under the lock: no other access can take effect between the check and the
        // stamp, nor reach the history before this one.
        let mut ev = Event::new(self.sink.now_us(), client, EventKind::Ok, op.op(), key);
        ev.token = given;
        ev.slot = slot_no;
        let result = match stale {
            Some(highest) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                let refused = Refused {
                    key: key.to_string(),
                    token,
                    highest,
                };
                ev.kind = EventKind::Fail;
                ev.error = Some(refused.to_string());
                ev.error_kind = Some(ErrorKind::Stale);
                // A refused write still says what it tried to write.
                ev.value = (op == AccessOp::Write).then_some(value);
                if op != AccessOp::Write {
                    // No write follows a refused read: the slot is free again.
                    self.slot_of(client, key, AccessOp::Write);
                }
                Err(refused)
            }
            None => {
                // Reads raise the fence too: a read-modify-write by a superseded holder must
                // not read after its successor did.
                if op != AccessOp::SharedRead {
                    slot.highest = Some(slot.highest.map_or(token, |h| h.max(token)));
                }
                if op == AccessOp::Write {
                    slot.value = value;
                }
                ev.value = Some(slot.value);
                Ok(slot.value)
            }
        };
        self.sink.record(ev);
        result
    }

    /// The value of `key`'s register now (0 for a key never written; a semaphore's slot 0).
    pub fn value(&self, key: &str) -> u64 {
        let slots = self.slots.locked();
        slots.get(key).map_or(0, |s| s.first.value)
    }

    /// Accesses refused so far (always 0 unfenced).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::history::Clock;

    /// Keeps every event, in the order recorded.
    struct Collect {
        clock: Clock,
        events: Mutex<Vec<Event>>,
    }

    impl EventSink for Collect {
        fn clock(&self) -> Clock {
            self.clock
        }
        fn record(&self, event: Event) {
            self.events.locked().push(event);
        }
    }

    fn register(mode: ResourceMode) -> (Register, Arc<Collect>) {
        let sink = Arc::new(Collect {
            clock: Clock::start(),
            events: Mutex::new(Vec::new()),
        });
        (Register::new(mode, sink.clone()), sink)
    }

    /// (client, op, kind, token, value, error_kind) of every event.
    type Row = (
        u32,
        Op,
        EventKind,
        Option<u64>,
        Option<u64>,
        Option<ErrorKind>,
    );

    fn rows(sink: &Collect) -> Vec<Row> {
        sink.events
            .locked()
            .iter()
            .map(|e| {
                (
                    e.client().unwrap(),
                    e.op,
                    e.kind,
                    e.token,
                    e.value,
                    e.error_kind,
                )
            })
            .collect()
    }

    #[test]
    fn fenced_refuses_a_lower_token_on_read_and_on_write_and_accepts_an_equal_one() {
        let (r, sink) = register(ResourceMode::Fenced);
        // Client 1 (token 5) reads 0 and writes 1; client 0 (token 4, superseded) is refused
        // both ways; client 1 reads again with the same token 5: accepted.
        assert_eq!(r.read(1, "k", 5), Ok(0));
        assert_eq!(r.write(1, "k", 5, 1), Ok(()));
        let refused = Refused {
            key: "k".into(),
            token: 4,
            highest: 5,
        };
        assert_eq!(r.read(0, "k", 4), Err(refused.clone()));
        assert_eq!(r.write(0, "k", 4, 7), Err(refused));
        assert_eq!(r.read(1, "k", 5), Ok(1));
        assert_eq!((r.value("k"), r.refused()), (1, 2));
        let (ok, fail) = (EventKind::Ok, EventKind::Fail);
        let stale = Some(ErrorKind::Stale);
        assert_eq!(
            rows(&sink),
            vec![
                (1, Op::Read, ok, Some(5), Some(0), None),
                (1, Op::Write, ok, Some(5), Some(1), None),
                (0, Op::Read, fail, Some(4), None, stale),
                // The refused write keeps the value it tried to write.
                (0, Op::Write, fail, Some(4), Some(7), stale),
                (1, Op::Read, ok, Some(5), Some(1), None),
            ]
        );
        let events = sink.events.locked();
        let text = events[2].error.as_deref().unwrap();
        assert!(
            text.contains("token 4") && text.contains("token 5") && text.contains("key k"),
            "{text}"
        );
        // Stamped in the order they took effect.
        assert!(events.windows(2).all(|w| w[0].t_us <= w[1].t_us));
        assert!(events.iter().all(|e| e.key == "k"));
    }

    #[test]
    fn a_read_alone_raises_the_fence() {
        let (r, _) = register(ResourceMode::Fenced);
        // Token 9 only reads; the holder of token 8 may no longer write what it read.
        assert_eq!(r.read(0, "k", 8), Ok(0));
        assert_eq!(r.read(1, "k", 9), Ok(0));
        assert!(r.write(0, "k", 8, 1).is_err());
        assert_eq!(r.value("k"), 0);
        // A higher token passes and raises it further.
        assert_eq!(r.write(2, "k", 12, 3), Ok(()));
        assert!(r.read(1, "k", 9).is_err());
        assert_eq!(r.refused(), 2);
    }

    #[test]
    fn keys_are_independent() {
        let (r, _) = register(ResourceMode::Fenced);
        assert_eq!(r.write(0, "a", 10, 4), Ok(()));
        // Token 1 is low for "a" but the first seen on "b".
        assert_eq!(r.read(1, "b", 1), Ok(0));
        assert_eq!(r.write(1, "b", 1, 1), Ok(()));
        assert_eq!((r.value("a"), r.value("b"), r.value("c")), (4, 1, 0));
        assert_eq!(r.refused(), 0);
    }

    #[test]
    fn unfenced_accepts_everything_and_loses_the_update() {
        let (r, sink) = register(ResourceMode::Unfenced);
        // Two holders interleave a read-modify-write: both read 0, both write 1.
        assert_eq!(r.read(0, "k", 2), Ok(0));
        assert_eq!(r.read(1, "k", 3), Ok(0));
        assert_eq!(r.write(1, "k", 3, 1), Ok(()));
        assert_eq!(r.write(0, "k", 2, 1), Ok(()));
        assert_eq!((r.value("k"), r.refused()), (1, 0));
        assert!(
            sink.events
                .locked()
                .iter()
                .all(|e| e.kind == EventKind::Ok && e.error.is_none())
        );
    }

    #[test]
    fn concurrent_increments_under_one_token_each_add_up() {
        let (r, sink) = register(ResourceMode::Fenced);
        let r = Arc::new(r);
        // Eight threads each do 100 read+write pairs through a mutex of their own making: the
        // register's lock alone does not serialize a read-modify-write, so they take turns.
        let turn = Arc::new(Mutex::new(()));
        let threads: Vec<_> = (0..8u32)
            .map(|c| {
                let (r, turn) = (r.clone(), turn.clone());
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        let _t = turn.locked();
                        let v = r.read(c, "k", 1).unwrap();
                        r.write(c, "k", 1, v + 1).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(r.value("k"), 800);
        let events = sink.events.locked();
        assert_eq!(events.len(), 1600);
        // The recorded writes are 1..=800 in order: history order is effect order.
        let written: Vec<u64> = events
            .iter()
            .filter(|e| e.op == Op::Write)
            .map(|e| e.value.unwrap())
            .collect();
        assert_eq!(written, (1..=800).collect::<Vec<_>>());
    }

    #[test]
    fn a_semaphore_s_holders_each_take_a_free_slot_and_the_one_too_many_shares_slot_0() {
        let (r, sink) = register(ResourceMode::Unfenced);
        let r = r.with_permits(2);
        let read = |c| r.access(c, "k", Some(1), AccessOp::Read, 0).unwrap();
        let write = |c, v| r.access(c, "k", Some(1), AccessOp::Write, v).unwrap();
        read(1);
        read(2);
        write(1, 5); // client 1 leaves slot 0
        read(3); // takes slot 0 again, reads client 1's 5
        read(4); // both slots taken: a semaphore that admitted a third holder
        write(2, 9);
        let slots: Vec<(u32, Op, Option<u64>, Option<u64>)> = sink
            .events
            .locked()
            .iter()
            .map(|e| (e.client().unwrap(), e.op, e.slot, e.value))
            .collect();
        assert_eq!(
            slots,
            vec![
                (1, Op::Read, Some(0), Some(0)),
                (2, Op::Read, Some(1), Some(0)),
                (1, Op::Write, Some(0), Some(5)),
                (3, Op::Read, Some(0), Some(5)),
                (4, Op::Read, Some(0), Some(5)),
                (2, Op::Write, Some(1), Some(9)),
            ]
        );
        // Without permits, one register per key and no slot.
        let (plain, sink) = register(ResourceMode::Unfenced);
        plain.access(1, "k", Some(1), AccessOp::Write, 3).unwrap();
        assert_eq!(plain.value("k"), 3);
        assert_eq!(sink.events.locked()[0].slot, None);
    }

    #[test]
    fn in_the_recorded_order_no_slot_is_taken_while_another_client_is_in_it() {
        let (r, sink) = register(ResourceMode::Unfenced);
        let r = Arc::new(r.with_permits(4));
        let threads: Vec<_> = (0..4u32)
            .map(|c| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let v = r.access(c, "k", Some(1), AccessOp::Read, 0).unwrap();
                        r.access(c, "k", Some(1), AccessOp::Write, v + 1).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Four clients, four slots: replayed in the history's order, every read finds its
        // slot empty, so no increment is lost.
        let mut in_slot: HashMap<u64, u32> = HashMap::new();
        for e in sink.events.locked().iter() {
            let (slot, client) = (e.slot.unwrap(), e.client().unwrap());
            match e.op {
                Op::Read => assert_eq!(in_slot.insert(slot, client), None, "{e:?}"),
                _ => assert_eq!(in_slot.remove(&slot), Some(client), "{e:?}"),
            }
        }
    }
}
