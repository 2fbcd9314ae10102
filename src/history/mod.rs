//! The history: every invocation and outcome of a run, one JSON object per line in
//! `history.jsonl`, in Jepsen's vocabulary (`invoke`, then `ok`, `fail` or `info`).
//!
//! Clients hold a cheap [`HistoryHandle`] and send events to the one writer task owned by the
//! [`Recorder`]; the writer flushes at least every 100 ms so a crash loses at most that much.
//! Checkers and statistics read only this history, held compactly as [`Events`] ([`read_events`]):
//! an [`Event`] is for writing, tests and short histories.

mod operation;
mod store;

pub use operation::{
    CriticalSection, Operation, Operations, Section, TimeOrder, critical_sections, in_time_order,
    into_time_order, operations,
};
pub use store::{EventRef, Events};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

/// How often buffered events reach the file, at the latest.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// The `error` text of an acquisition that ran out of its deadline (its `error_kind` is
/// `timeout`).
pub const TIMEOUT_ERROR: &str = "timeout";

/// Who acted: a lock client, or the nemesis injecting faults (Jepsen's `:process`). Written as
/// the client's index, or the string `"nemesis"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum Process {
    /// Lock client number n (from 0).
    Client(u32),
    /// The fault injector.
    Nemesis(NemesisName),
}

/// The nemesis' name in a history (`"nemesis"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NemesisName {
    /// The one fault injector of a cell.
    Nemesis,
}

impl Process {
    /// The nemesis.
    pub const NEMESIS: Process = Process::Nemesis(NemesisName::Nemesis);

    /// The client's index, `None` for the nemesis.
    pub fn client(self) -> Option<u32> {
        match self {
            Process::Client(c) => Some(c),
            Process::Nemesis(_) => None,
        }
    }
}

/// Read by hand rather than as an untagged enum: serde buffers every untagged value before
/// trying each variant, which was the largest single cost of reading a long history.
impl<'de> Deserialize<'de> for Process {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Process, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Process;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a client index or \"nemesis\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Process, E> {
                u32::try_from(v)
                    .map(Process::Client)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Process, E> {
                u32::try_from(v)
                    .map(Process::Client)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Process, E> {
                match v {
                    "nemesis" => Ok(Process::NEMESIS),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl From<u32> for Process {
    fn from(c: u32) -> Process {
        Process::Client(c)
    }
}

impl std::fmt::Display for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Process::Client(c) => write!(f, "client {c}"),
            Process::Nemesis(_) => f.write_str("nemesis"),
        }
    }
}

/// Why an operation failed or may have failed, so statistics group causes by kind rather than
/// by matching message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The acquire deadline passed.
    Timeout,
    /// A connection dropped or a request went unanswered: the outcome is unknown.
    Connection,
    /// The lease was already gone (expired, session ended, taken over).
    Lost,
    /// The system does not offer what was asked (a strategy it lacks).
    Unsupported,
    /// The server refused the request.
    Server,
    /// The fenced resource refused an access whose fencing token is lower than one it had
    /// already seen (a `read` or `write` with `fail`).
    Stale,
    /// An acquisition whose request went unanswered, then withdrawn: the client gave back
    /// everything the attempt may have created (etcd: revoked its lease) and the server confirmed
    /// it, so the outcome is known after all: this client does not hold the lock.
    Withdrawn,
    /// The cluster could not take the request and certainly did not apply it (no leader, a
    /// connection refused, a read-only or loading Redis), and the operation's deadline left no
    /// time to ask again.
    Unavailable,
}

impl ErrorKind {
    /// The name used in histories and summaries.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Lost => "lost",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Server => "server",
            ErrorKind::Stale => "stale",
            ErrorKind::Withdrawn => "withdrawn",
            ErrorKind::Unavailable => "unavailable",
        }
    }
}

/// What an event says about its operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The operation started.
    Invoke,
    /// It happened.
    Ok,
    /// It certainly did not happen.
    Fail,
    /// Unknown: it may or may not have happened (a timeout mid-flight, a lost connection).
    Info,
}

/// The operation an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Taking the lock.
    Acquire,
    /// Giving it back.
    Release,
    /// The holder learned its lease is gone (a single event, usually `info`).
    LeaseLost,
    /// A nemesis fault starting (`invoke`) or ending (`ok`), with `fault` and `targets`.
    Fault,
    /// A critical section read the protected register of `key` (a single event written by the
    /// resource: `ok` with the `value` read and the `token` shown, or `fail` when the fenced
    /// resource refused a stale token).
    Read,
    /// A critical section wrote `value` to the protected register of `key` (a single event, as
    /// `read`).
    Write,
}

impl Op {
    /// True for ops recorded as one event with no `invoke` (`lease_lost`, `read`, `write`):
    /// they are facts, not operations to pair.
    pub fn is_single(self) -> bool {
        matches!(self, Op::LeaseLost | Op::Read | Op::Write)
    }
}

/// What an acquisition of a read-write lock asked for (`mode` on its acquire events); absent
/// means exclusive, as every acquisition of the other kinds is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Shared with other readers.
    Read,
    /// Exclusive: no other holder, reader or writer.
    Write,
}

impl Mode {
    /// Whether an acquisition in `mode` (`None`: exclusive) shares the lock with other readers.
    pub fn is_read(mode: Option<Mode>) -> bool {
        mode == Some(Mode::Read)
    }
}

/// One line of `history.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Event {
    /// Microseconds since the run started, on the recorder's one monotonic clock.
    pub t_us: u64,
    /// Who acted (`client` in histories written before the nemesis had a name of its own).
    #[serde(alias = "client")]
    pub process: Process,
    /// Invocation or outcome.
    pub kind: EventKind,
    /// What was attempted.
    pub op: Op,
    /// The lock key (empty for a `fault`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// Fencing token of a granted lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// Notifications received while waiting (acquire outcomes, granted or not); absent where
    /// the client cannot see them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups: Option<u64>,
    /// Server round trips the acquisition took (acquire outcomes, granted or not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Checks a waiter made because no notification came within the fallback poll interval
    /// (acquire outcomes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_polls: Option<u64>,
    /// Queue position taken by a predecessor waiter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<u64>,
    /// Open loop: when the operation was scheduled to start (on acquire `invoke`), so latency
    /// can be measured from there and not from when a late client got round to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended_us: Option<u64>,
    /// The hold time the workload asked for, µs, sampled before the hold (on release `invoke`;
    /// the measured hold is that event's time minus the acquire `ok`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_us: Option<u64>,
    /// Closed loop: the think time the workload asked for before this acquisition, µs (on
    /// acquire `invoke`, when the client went from its previous outcome straight to this
    /// invoke; absent on a client's first acquisition and in stampede rounds, whose barrier
    /// decides the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_us: Option<u64>,
    /// Lease TTL of a granted lease, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `read`: the register's value read; `write`: the value written (accepted or refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// Why a `fail` or `info` happened, in words ([`TIMEOUT_ERROR`] for an acquire deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why a `fail` or `info` happened, as a kind statistics group by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// `fault` events: the fault's kind as chaos files name it (`kill`, `pause-node`,
    /// `partition`, `pause-client`, `clock`; histories written before read `pause` and
    /// `client-pause`, see [`fault_kind`]); its `invoke` is
    /// the start, its `ok` the end (the heal), `info` a start or end that may have half-happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// `fault` events: the nodes (or client processes) the fault acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    /// A fault's end (`ok`/`info`): when its start took effect (the start completed), µs. Its
    /// `invoke` is when the start was asked for; absent when the start failed, and in histories
    /// from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_us: Option<u64>,
    /// A fault's end (`ok`/`info`): when its undo was asked for, µs; the end event itself is
    /// when the undo took effect (for a kill: the node serves its cluster again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_us: Option<u64>,
    /// A fault's end: what its start did, where words are needed: the clock fault's model and
    /// each node's effect (`partial: ...` when a node refused its part).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// Read-write locks: what the acquisition asked for, on its acquire `invoke` and outcome
    /// (`read` or `write`); absent means exclusive (every other kind of lock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Reentrant locks: the client's hold count on the key this event makes or gives back, on
    /// an acquire `ok` (1 for the outer hold, 2 for the first re-entry, ...) and on a release
    /// `invoke` (the depth it releases: 1 gives up the outer hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u64>,
    /// Semaphores: which of the `permits` slots (from 0) the holder took, on an acquire `ok`
    /// and on the `read`/`write` of the slot's own protected register.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u64>,
}

impl Event {
    /// An event with every optional field empty.
    pub fn new(
        t_us: u64,
        process: impl Into<Process>,
        kind: EventKind,
        op: Op,
        key: impl Into<String>,
    ) -> Event {
        Event {
            t_us,
            process: process.into(),
            kind,
            op,
            key: key.into(),
            token: None,
            wakeups: None,
            requests: None,
            fallback_polls: None,
            queue_position: None,
            intended_us: None,
            hold_us: None,
            think_us: None,
            ttl_ms: None,
            value: None,
            error: None,
            error_kind: None,
            fault: None,
            targets: None,
            effect_us: None,
            undo_us: None,
            effect: None,
            mode: None,
            depth: None,
            slot: None,
        }
    }

    /// A nemesis `fault` event: `invoke` starts the fault named `fault` on `targets`, `ok` ends
    /// it.
    pub fn fault(t_us: u64, kind: EventKind, fault: &str, targets: Vec<String>) -> Event {
        Event {
            fault: Some(fault.to_string()),
            targets: Some(targets),
            ..Event::new(t_us, Process::NEMESIS, kind, Op::Fault, "")
        }
    }

    /// The client that acted, `None` for the nemesis.
    pub fn client(&self) -> Option<u32> {
        self.process.client()
    }
}

/// A `fault` event's kind under its one name: histories written before the names were unified
/// call `pause-node` `pause` and `pause-client` `client-pause`.
pub fn fault_kind(recorded: &str) -> &str {
    match recorded {
        "pause" => "pause-node",
        "client-pause" => "pause-client",
        k => k,
    }
}

/// Problems writing or reading a history.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The history file could not be created, written or read.
    #[error("{path}: {source} (check that the results folder exists and the disk has room)")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The recorder has finished (or its writer failed); the event was not recorded.
    #[error("the history recorder is closed; events must be recorded before Recorder::finish")]
    Closed,
    /// A line of a history file is not a valid event.
    #[error("{path}:{line}: not a history event: {source}")]
    Parse {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
}

/// The raw `CLOCK_MONOTONIC` reading now, in nanoseconds: the one clock every process of this
/// machine reads alike, so a worker process can stamp events on its runner's clock.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists on every Unix this
    // tool runs on, so the call cannot fail (and a zeroed reading would only skew, not crash).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// An `Instant` and the raw monotonic reading of the same moment. `Instant` is `CLOCK_MONOTONIC`
/// on Linux but does not expose its raw value, so the raw clock is read on both sides of
/// `Instant::now()` and the middle taken; a pair whose readings lie more than a microsecond
/// apart (the thread was preempted in between) is read again, keeping the tightest.
fn paired_now() -> (Instant, u64) {
    let mut best: Option<(Instant, u64, u64)> = None;
    for _ in 0..8 {
        let before = monotonic_ns();
        let at = Instant::now();
        let after = monotonic_ns();
        let width = after.saturating_sub(before);
        if best.is_none_or(|(_, _, w)| width < w) {
            best = Some((at, before + width / 2, width));
        }
        if width <= 1_000 {
            break;
        }
    }
    let (at, mono, _) = best.expect("the loop runs at least once");
    (at, mono)
}

/// The run's one monotonic clock; clones share the same start. Its zero is also known as a raw
/// `CLOCK_MONOTONIC` reading ([`Clock::epoch_ns`]), from which worker processes build the same
/// clock ([`Clock::from_epoch_ns`]) and stamp their events themselves: the events of a stopped
/// worker keep the times they happened at, not the time they reached the recorder.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    epoch_ns: u64,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        let (start, epoch_ns) = paired_now();
        Clock { start, epoch_ns }
    }
    /// The clock whose zero is the raw `CLOCK_MONOTONIC` reading `epoch_ns` (another process's
    /// [`Clock::epoch_ns`] on this machine); `None` if no `Instant` can stand for that reading.
    pub fn from_epoch_ns(epoch_ns: u64) -> Option<Clock> {
        let (now, now_ns) = paired_now();
        let start = if epoch_ns <= now_ns {
            now.checked_sub(Duration::from_nanos(now_ns - epoch_ns))?
        } else {
            now.checked_add(Duration::from_nanos(epoch_ns - now_ns))?
        };
        Some(Clock { start, epoch_ns })
    }
    /// The raw `CLOCK_MONOTONIC` reading of this clock's zero, ns.
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }
    /// Microseconds since the start.
    pub fn now_us(&self) -> u64 {
        self.us_at(Instant::now())
    }
    /// Microseconds from the start to `t` (zero if `t` is earlier).
    pub fn us_at(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_micros() as u64
    }
    /// The instant of a history timestamp, e.g. an open-loop intended start.
    pub fn instant_at(&self, t_us: u64) -> Instant {
        self.start + Duration::from_micros(t_us)
    }
}

/// Where a lock client's events go: the recorder of this process ([`HistoryHandle`]), or a
/// worker process's stdout, which its runner reads into the one recorder.
///
/// Contract: every sink of a cell stamps on the same [`Clock`] (same zero, same monotonic
/// source), and `record` neither blocks nor fails loudly: an event that cannot be delivered
/// (the recorder finished, the runner went away) is dropped, and whoever owns the recorder or
/// the worker sees that failure where it finishes them.
pub trait EventSink: Send + Sync {
    /// The cell's clock, for stamping events.
    fn clock(&self) -> Clock;
    /// Hands `event` on, in the order of calls from one task.
    fn record(&self, event: Event);
    /// Microseconds since the cell started.
    fn now_us(&self) -> u64 {
        self.clock().now_us()
    }
}

// An event travels by value: the channel stores its items in blocks it allocates once per 32
// and reuses, where a boxed event cost an allocation in the client and a free in the writer,
// on another thread (glibc then takes the arena's lock), six times a lock cycle.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Event(Event),
    Close,
}

/// A client's way into the history: cheap to clone, never blocks.
#[derive(Clone)]
pub struct HistoryHandle {
    tx: mpsc::UnboundedSender<Msg>,
    clock: Clock,
}

impl HistoryHandle {
    /// Microseconds since the run started, for stamping events.
    pub fn now_us(&self) -> u64 {
        self.clock.now_us()
    }
    /// The run's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }
    /// Queues `event` for the writer; fails only once the recorder has finished or failed.
    pub fn record(&self, event: Event) -> Result<(), HistoryError> {
        self.tx
            .send(Msg::Event(event))
            .map_err(|_| HistoryError::Closed)
    }
}

impl EventSink for HistoryHandle {
    fn clock(&self) -> Clock {
        self.clock
    }
    fn record(&self, event: Event) {
        // Fails only after the recorder finished; its owner sees that at `finish`.
        let _ = HistoryHandle::record(self, event);
    }
}

/// Owns the writer task that streams events to `history.jsonl`.
pub struct Recorder {
    handle: HistoryHandle,
    tap: broadcast::Sender<Event>,
    task: JoinHandle<Result<u64, HistoryError>>,
}

/// How many written events a slow [`Recorder::subscribe`] receiver may fall behind by before it
/// misses some (it is told how many it missed).
pub const TAP_CAPACITY: usize = 4096;

impl Recorder {
    /// Creates (truncates) `path` and starts the writer; the clock starts now. Must be called
    /// inside a tokio runtime.
    pub fn create(path: &Path) -> Result<Recorder, HistoryError> {
        let io = |source| HistoryError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (tap, _) = broadcast::channel(TAP_CAPACITY);
        let task = tokio::spawn(write_events(
            path.to_path_buf(),
            tokio::fs::File::from_std(file),
            rx,
            tap.clone(),
        ));
        Ok(Recorder {
            handle: HistoryHandle {
                tx,
                clock: Clock::start(),
            },
            tap,
            task,
        })
    }

    /// Every event written from now on, in file order, as it is written: for whoever acts on
    /// what clients do while the cell runs (a nemesis that pauses the lock holder, a test).
    /// A receiver more than [`TAP_CAPACITY`] events behind misses the oldest.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tap.subscribe()
    }

    /// A handle for one client (or the nemesis).
    pub fn handle(&self) -> HistoryHandle {
        self.handle.clone()
    }

    /// The run's clock.
    pub fn clock(&self) -> Clock {
        self.handle.clock
    }

    /// Writes every event queued so far, flushes and syncs the file, and returns the number of
    /// events written. Later `record` calls fail with [`HistoryError::Closed`].
    pub async fn finish(self) -> Result<u64, HistoryError> {
        // Close travels behind every event already queued, so none of those is lost.
        let _ = self.handle.tx.send(Msg::Close);
        drop(self.handle);
        self.task.await.unwrap_or(Err(HistoryError::Closed))
    }
}

async fn write_events(
    path: PathBuf,
    file: tokio::fs::File,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    tap: broadcast::Sender<Event>,
) -> Result<u64, HistoryError> {
    let io = |source| HistoryError::Io {
        path: path.clone(),
        source,
    };
    let mut out = Lines {
        file: BufWriter::with_capacity(WRITE_BUFFER, file),
        line: Vec::with_capacity(512),
        count: 0,
        dirty: false,
    };
    let mut flush = tokio::time::interval(FLUSH_EVERY);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut drain = tokio::time::interval(DRAIN_EVERY);
    drain.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    'run: loop {
        // Someone acts on events as they happen (a nemesis waiting for a grant): each event
        // wakes this task. Otherwise the queue is drained on a short tick, so a client's
        // `record` wakes no task: a wake-up per event cost the clients a task switch, often
        // onto the other worker, each cycle.
        let listened = tap.receiver_count() > 0;
        tokio::select! {
            msg = rx.recv(), if listened => match msg {
                Some(Msg::Event(ev)) => out.write(ev, &tap).await.map_err(io)?,
                Some(Msg::Close) | None => break 'run,
            },
            _ = drain.tick(), if !listened => loop {
                match rx.try_recv() {
                    Ok(Msg::Event(ev)) => out.write(ev, &tap).await.map_err(io)?,
                    Ok(Msg::Close) | Err(mpsc::error::TryRecvError::Disconnected) => break 'run,
                    Err(mpsc::error::TryRecvError::Empty) => break,
                }
            },
            _ = flush.tick() => if out.dirty {
                out.file.flush().await.map_err(io)?;
                out.dirty = false;
            },
        }
    }
    // Refuse new events, then write those that raced with Close rather than drop them.
    rx.close();
    while let Some(msg) = rx.recv().await {
        if let Msg::Event(ev) = msg {
            out.write(ev, &tap).await.map_err(io)?;
        }
    }
    out.file.flush().await.map_err(io)?;
    out.file.get_mut().sync_data().await.map_err(io)?;
    Ok(out.count)
}

/// How long an event may wait in the queue while nobody listens to the tap. The file sees it
/// at the next flush ([`FLUSH_EVERY`]) anyway.
const DRAIN_EVERY: Duration = Duration::from_millis(5);

/// The file's buffer: one blocking write (tokio's file runs each on its blocking pool) per
/// this many bytes, about a thousand events.
const WRITE_BUFFER: usize = 256 * 1024;

/// The history file as the writer fills it, a line per event.
struct Lines {
    file: BufWriter<tokio::fs::File>,
    /// One event's line, reused.
    line: Vec<u8>,
    count: u64,
    /// Written since the last flush.
    dirty: bool,
}

impl Lines {
    /// Writes `ev` as the next line, then hands it to the tap's listeners, if any.
    async fn write(&mut self, ev: Event, tap: &broadcast::Sender<Event>) -> std::io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, &ev).map_err(std::io::Error::other)?;
        self.line.push(b'\n');
        self.file.write_all(&self.line).await?;
        self.count += 1;
        self.dirty = true;
        // Sent only while someone listens (the send would fail anyway).
        if tap.receiver_count() > 0 {
            let _ = tap.send(ev);
        }
        Ok(())
    }
}

/// Reads a `history.jsonl` back, in file order; blank lines are skipped, a bad line is an error
/// naming its line number.
pub fn read_history(path: &Path) -> Result<Vec<Event>, HistoryError> {
    read_history_lines(path).map(|(events, _)| events)
}

/// [`read_history`], with each event's 1-based line in the file (blank lines skipped count).
pub fn read_history_lines(path: &Path) -> Result<(Vec<Event>, Vec<usize>), HistoryError> {
    read_into(path)
}

/// [`read_history_lines`] into the compact [`Events`], for a history too long to hold as
/// `Event`s (what checkers read).
pub fn read_events(path: &Path) -> Result<(Events, Vec<usize>), HistoryError> {
    read_into(path)
}

/// Where a reader puts the events it parses.
trait Sink: Default + Send {
    /// Adds one event at the end.
    fn put(&mut self, e: Event);
    /// Adds every event of `other` at the end.
    fn append(&mut self, other: Self);
}

impl Sink for Vec<Event> {
    fn put(&mut self, e: Event) {
        self.push(e);
    }
    fn append(&mut self, other: Self) {
        self.extend(other);
    }
}

impl Sink for Events {
    fn put(&mut self, e: Event) {
        self.push(&e);
    }
    fn append(&mut self, other: Self) {
        Events::append(self, other);
    }
}

/// The file is read a line at a time, so its text is never held whole beside its events; a long
/// one is read in two halves side by side (parsing is most of the cost of checking a history).
fn read_into<S: Sink>(path: &Path) -> Result<(S, Vec<usize>), HistoryError> {
    let io = |source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    let middle = if len < SPLIT_ABOVE {
        len
    } else {
        line_start_after(path, len / 2).map_err(io)?
    };
    let (first, second) = std::thread::scope(|s| {
        let second = s.spawn(|| read_part::<S>(path, middle, len - middle));
        let first = read_part::<S>(path, 0, middle);
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first, second)
    });
    let parse = |(line, source)| HistoryError::Parse {
        path: path.to_path_buf(),
        line,
        source,
    };
    let first = first.map_err(io)?.map_err(parse)?;
    let skip = first.line_count;
    let second = second
        .map_err(io)?
        .map_err(|(line, source)| parse((line + skip, source)))?;
    let (mut events, mut lines) = (first.events, first.lines);
    events.append(second.events);
    lines.extend(second.lines.into_iter().map(|l| l + skip));
    Ok((events, lines))
}

/// Histories shorter than this (bytes) are read in one piece.
const SPLIT_ABOVE: u64 = 1 << 20;

/// The events of one byte range of a history, with their lines counted from the range's start.
struct Part<S> {
    events: S,
    lines: Vec<usize>,
    /// Lines in the range, blank ones included.
    line_count: usize,
}

/// Where the first line starting at or after `from` starts (the file's length if none does).
fn line_start_after(path: &Path, from: u64) -> std::io::Result<u64> {
    use std::io::{BufRead, Seek};
    let mut file = std::fs::File::open(path)?;
    file.seek(std::io::SeekFrom::Start(from.saturating_sub(1)))?;
    let mut skipped = Vec::new();
    let n = std::io::BufReader::new(file).read_until(b'\n', &mut skipped)?;
    Ok(from.saturating_sub(1) + n as u64)
}

/// Parses the `len` bytes of `path` from `from` (whole lines); a bad line is `Err` with its
/// line number counted from the range's start.
fn read_part<S: Sink>(
    path: &Path,
    from: u64,
    len: u64,
) -> std::io::Result<Result<Part<S>, (usize, serde_json::Error)>> {
    use std::io::{BufRead, Read, Seek};
    let mut file = std::fs::File::open(path)?;
    file.seek(std::io::SeekFrom::Start(from))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file.take(len));
    let mut part = Part {
        events: S::default(),
        lines: Vec::new(),
        line_count: 0,
    };
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(Ok(part));
        }
        part.line_count += 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(e) => part.events.put(e),
            Err(source) => return Ok(Err((part.line_count, source))),
        }
        part.lines.push(part.line_count);
    }
}

/// Parses history text; `path` only names the source in errors.
pub fn parse_history(text: &str, path: &Path) -> Result<Vec<Event>, HistoryError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| HistoryError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("lockbench-history-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("history.jsonl")
    }

    #[test]
    fn the_lock_kinds_fields_are_written_only_when_set() {
        let plain = Event::new(5, 1, EventKind::Ok, Op::Acquire, "k");
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"t_us":5,"process":1,"kind":"ok","op":"acquire","key":"k"}"#,
            "a mutex's events are as they always were"
        );
        let mut e = plain.clone();
        (e.mode, e.depth, e.slot) = (Some(Mode::Read), Some(2), Some(0));
        let json = serde_json::to_string(&e).unwrap();
        assert!(
            json.ends_with(r#""key":"k","mode":"read","depth":2,"slot":0}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), e);
        assert!(Mode::is_read(e.mode) && !Mode::is_read(Some(Mode::Write)) && !Mode::is_read(None));
    }

    #[test]
    fn events_serialize_snake_case_without_empty_fields() {
        let mut ev = Event::new(12, 3, EventKind::Ok, Op::LeaseLost, "k");
        ev.token = Some(7);
        let line = serde_json::to_string(&ev).unwrap();
        assert_eq!(
            line,
            r#"{"t_us":12,"process":3,"kind":"ok","op":"lease_lost","key":"k","token":7}"#
        );
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, ev);
        let line = serde_json::to_string(&Event::fault(
            9,
            EventKind::Invoke,
            "partition",
            vec!["n1".into(), "n2".into()],
        ))
        .unwrap();
        assert_eq!(
            line,
            r#"{"t_us":9,"process":"nemesis","kind":"invoke","op":"fault","fault":"partition","targets":["n1","n2"]}"#
        );
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!((back.process, back.client()), (Process::NEMESIS, None));
    }

    #[tokio::test]
    async fn many_clients_one_file_all_events_kept() {
        let path = tmp("many");
        let rec = Recorder::create(&path).unwrap();
        let mut tasks = Vec::new();
        for c in 0..8u32 {
            let h = rec.handle();
            tasks.push(tokio::spawn(async move {
                for i in 0..100u64 {
                    let mut ev = Event::new(h.now_us(), c, EventKind::Invoke, Op::Acquire, "k");
                    ev.token = Some(i);
                    h.record(ev).unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let late = rec.handle();
        assert_eq!(rec.finish().await.unwrap(), 800);
        assert!(matches!(
            late.record(Event::new(0, 0, EventKind::Ok, Op::Acquire, "k")),
            Err(HistoryError::Closed)
        ));
        let events = read_history(&path).unwrap();
        assert_eq!(events.len(), 800);
        for c in 0..8 {
            let tokens: Vec<u64> = events
                .iter()
                .filter(|e| e.client() == Some(c))
                .filter_map(|e| e.token)
                .collect();
            assert_eq!(
                tokens,
                (0..100).collect::<Vec<_>>(),
                "client {c} kept its order"
            );
        }
    }

    #[tokio::test]
    async fn events_reach_the_file_before_finish() {
        let path = tmp("flush");
        let rec = Recorder::create(&path).unwrap();
        rec.handle()
            .record(Event::new(1, 0, EventKind::Invoke, Op::Acquire, "k"))
            .unwrap();
        tokio::time::sleep(FLUSH_EVERY * 3).await;
        assert_eq!(
            read_history(&path).unwrap().len(),
            1,
            "flushed without finish"
        );
        assert_eq!(rec.finish().await.unwrap(), 1);
    }

    #[test]
    fn a_clock_rebuilt_from_its_raw_epoch_reads_the_same() {
        let clock = Clock::start();
        std::thread::sleep(Duration::from_millis(3));
        let again = Clock::from_epoch_ns(clock.epoch_ns()).expect("a past epoch is representable");
        assert_eq!(again.epoch_ns(), clock.epoch_ns());
        let t = Instant::now();
        // Both stand for the same zero, to within the pairing's microsecond.
        assert!(
            clock.us_at(t).abs_diff(again.us_at(t)) <= 1,
            "{} vs {}",
            clock.us_at(t),
            again.us_at(t)
        );
        assert!(clock.us_at(t) >= 3000);
        // The raw clock and Instant advance together: 3 ms later is 3 ms later on both.
        let raw = monotonic_ns();
        let us = (raw - clock.epoch_ns()) / 1000;
        assert!(
            us.abs_diff(clock.now_us()) <= 50,
            "raw {us} µs vs clock {} µs",
            clock.now_us()
        );
        // An epoch in the (near) future is a clock that has not started yet.
        let later = Clock::from_epoch_ns(monotonic_ns() + 1_000_000_000).unwrap();
        assert_eq!(later.now_us(), 0);
    }

    #[tokio::test]
    async fn subscribers_see_events_as_they_are_written() {
        let path = tmp("tap");
        let rec = Recorder::create(&path).unwrap();
        let mut tap = rec.subscribe();
        for t in 0..3 {
            rec.handle()
                .record(Event::new(t, 1, EventKind::Invoke, Op::Acquire, "k"))
                .unwrap();
        }
        for t in 0..3 {
            let ev = tokio::time::timeout(Duration::from_secs(5), tap.recv())
                .await
                .expect("the tap delivers within 5 s")
                .unwrap();
            assert_eq!(ev.t_us, t);
        }
        assert_eq!(rec.finish().await.unwrap(), 3);
    }

    #[test]
    fn a_process_reads_as_a_client_index_or_the_nemesis_and_nothing_else() {
        let p = |j: &str| serde_json::from_str::<Process>(j);
        assert_eq!(p("7").unwrap(), Process::Client(7));
        assert_eq!(p("\"nemesis\"").unwrap(), Process::NEMESIS);
        for bad in ["-1", "4294967296", "\"client\"", "1.5", "null"] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_long_history_read_in_two_halves_keeps_every_line_and_names_a_bad_one() {
        let path = tmp("halves");
        // 3 MB: read in two parts; a blank line after every 1 000 events shifts later lines.
        let (mut text, mut expect) = (String::new(), Vec::new());
        let mut line = 0;
        for i in 0..30_000u64 {
            let ev = Event::new(
                i,
                (i % 7) as u32,
                EventKind::Invoke,
                Op::Acquire,
                "a-long-key",
            );
            text.push_str(&serde_json::to_string(&ev).unwrap());
            text.push('\n');
            line += 1;
            expect.push((i, line));
            if i % 1000 == 999 {
                text.push('\n');
                line += 1;
            }
        }
        assert!(text.len() as u64 > 2 * SPLIT_ABOVE, "{} bytes", text.len());
        std::fs::write(&path, &text).unwrap();
        let (events, lines) = read_history_lines(&path).unwrap();
        let got: Vec<(u64, usize)> = events.iter().map(|e| e.t_us).zip(lines).collect();
        assert_eq!(got, expect);
        // A bad line in the second half is named by its line in the whole file: 30 030 lines
        // written (30 000 events, a blank after each thousandth), the bad one is line 30 031.
        text.push_str("{\"t_us\":1,\n");
        std::fs::write(&path, &text).unwrap();
        let e = read_history_lines(&path).unwrap_err().to_string();
        assert!(
            e.contains("history.jsonl:30031: not a history event"),
            "{e}"
        );
    }

    #[test]
    fn bad_line_is_named() {
        let text = "{\"t_us\":1,\"client\":0,\"kind\":\"invoke\",\"op\":\"acquire\",\"key\":\"k\"}\n\n{\"t_us\":2,";
        let e = parse_history(text, Path::new("run/history.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("run/history.jsonl:3: not a history event"),
            "{e}"
        );
        let e = parse_history(
            "{\"t_us\":1,\"client\":0,\"kind\":\"maybe\",\"op\":\"acquire\",\"key\":\"k\"}",
            Path::new("h"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("h:1:") && e.contains("maybe"), "{e}");
    }
}
