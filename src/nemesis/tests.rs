use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex as StdMutex;

use tokio::sync::watch;

use super::*;
use crate::cluster::{ClusterError, DataOnRestart};
use crate::fault::{ClockAccess, ClockSkew, Grudge, Skew};
use crate::history::{Recorder, read_history};

/// Records every call; counts what is in effect per node, so an unbalanced call shows.
/// `slow` makes every call take that long (to cancel mid-call); `refuse` fails pauses of a node.
#[derive(Default)]
struct Double {
    log: StdMutex<Vec<String>>,
    /// node → kills minus restarts, pauses minus resumes; "partition" → cuts in effect (0/1).
    effect: StdMutex<BTreeMap<String, i64>>,
    slow: Duration,
    refuse: Option<String>,
    /// How long a restarted node takes to serve its cluster (0: at once).
    rejoin: Duration,
    /// node → when it was last restarted.
    restarted: StdMutex<BTreeMap<String, std::time::Instant>>,
}

impl Double {
    async fn call(&self, what: String, key: String, delta: i64) {
        if !self.slow.is_zero() {
            tokio::time::sleep(self.slow).await;
        }
        let mut e = self.effect.lock().unwrap();
        let v = e.entry(key).or_default();
        // Restart/resume of a running node and a heal with no cut do nothing (the contract).
        *v = (*v + delta).max(0);
        self.log.lock().unwrap().push(what);
    }
    fn left(&self) -> Vec<String> {
        let e = self.effect.lock().unwrap();
        e.iter()
            .filter(|(_, v)| **v != 0)
            .map(|(k, _)| k.clone())
            .collect()
    }
    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Faultable for Double {
    fn servers(&self) -> Vec<String> {
        (1..=5).map(|i| format!("n{i}")).collect()
    }
    async fn leader(&self) -> Result<Option<String>, ClusterError> {
        Ok(Some("n3".into()))
    }
    async fn kill(&self, node: &str) -> Result<(), ClusterError> {
        // As Docker refuses to kill a container that is not running.
        if self.effect.lock().unwrap().get(&format!("kill {node}")) > Some(&0) {
            self.log
                .lock()
                .unwrap()
                .push(format!("kill {node} refused"));
            return Err(ClusterError::Fault {
                node: node.into(),
                error: "not running".into(),
            });
        }
        self.call(format!("kill {node}"), format!("kill {node}"), 1)
            .await;
        Ok(())
    }
    async fn restart(&self, node: &str, _: DataOnRestart) -> Result<(), ClusterError> {
        self.restarted
            .lock()
            .unwrap()
            .insert(node.into(), std::time::Instant::now());
        self.call(format!("restart {node}"), format!("kill {node}"), -1)
            .await;
        Ok(())
    }
    async fn pause(&self, node: &str) -> Result<(), ClusterError> {
        if self.refuse.as_deref() == Some(node) {
            return Err(ClusterError::BadPartition(format!("{node} refuses")));
        }
        self.call(format!("pause {node}"), format!("pause {node}"), 1)
            .await;
        Ok(())
    }
    async fn resume(&self, node: &str) -> Result<(), ClusterError> {
        self.call(format!("resume {node}"), format!("pause {node}"), -1)
            .await;
        Ok(())
    }
    async fn partition(&self, g: &Grudge) -> Result<(), ClusterError> {
        self.call(format!("partition {:?}", g.nodes()), "partition".into(), 1)
            .await;
        Ok(())
    }
    async fn heal(&self) -> Result<(), ClusterError> {
        self.call("heal".into(), "partition".into(), -1_000).await;
        Ok(())
    }
    fn clock(&self, _: &str) -> Result<ClockAccess, ClusterError> {
        Ok(ClockAccess::Monotonic)
    }
    async fn serving(&self, node: &str) -> Result<(), String> {
        let since = self.restarted.lock().unwrap().get(node).copied();
        match since {
            Some(t) if t.elapsed() < self.rejoin => Err(format!("{node} is still catching up")),
            _ => Ok(()),
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockbench-nemesis-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("history.jsonl")
}

const SCHEDULE: &str = r#"
seed = 11
[[faults]]
kind = "kill"
target = "minority"
every = "200ms"
jitter = "50ms"
restart_after = "80ms"

[[faults]]
kind = "partition"
shape = "halves"
start = "100ms"
duration = "250ms"

[[faults]]
kind = "pause-node"
target = "leader"
start = "500ms"
duration = "10s"
"#;

/// Plays `schedule` on `on` for `run`, then stops as the runner does; returns the history.
/// With `cancel`, the nemesis' future is dropped at `run` instead and the books healed after.
async fn play(on: &Double, schedule: &str, run: Duration, cancel: bool, name: &str) -> Vec<Event> {
    let path = scratch(name);
    let recorder = Recorder::create(&path).unwrap();
    play_on(on, schedule, run, cancel, (path, recorder), None).await
}

/// [`play`] into a history already begun (`path`, its `recorder`), with the cell's clients
/// run by `workers`.
async fn play_on(
    on: &Double,
    schedule: &str,
    run: Duration,
    cancel: bool,
    (path, recorder): (PathBuf, Recorder),
    workers: Option<Arc<dyn WorkerProcesses>>,
) -> Vec<Event> {
    let schedule = Schedule::from_str(schedule, "chaos/test.toml").expect("schedule");
    let (stop, stopped) = watch::channel(false);
    let running = Running {
        clock: recorder.clock(),
        history: recorder.handle(),
        events: recorder.subscribe(),
        workers,
        links: None,
        stopped,
    };
    let books = Books::default();
    let nemesis = Nemesis::new(&schedule, Duration::from_secs(20), "/lb/t", books.clone());
    let game = nemesis.play(on, running);
    if cancel {
        assert!(tokio::time::timeout(run, game).await.is_err());
        assert!(books.in_effect().await > 0, "cancelled mid-fault");
        books.heal(on, recorder.clock(), None).await.unwrap();
    } else {
        tokio::pin!(game);
        tokio::select! {
            () = &mut game => panic!("the nemesis ended before the clients"),
            () = tokio::time::sleep(run) => {}
        }
        stop.send(true).unwrap();
        game.await;
    }
    assert_eq!(books.in_effect().await, 0);
    recorder.finish().await.unwrap();
    let h = read_history(&path).unwrap();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
    h
}

/// (kind, fault, targets) of every fault event.
fn shape(h: &[Event]) -> Vec<(EventKind, String, Vec<String>)> {
    h.iter()
        .filter(|e| e.op == Op::Fault)
        .map(|e| (e.kind, e.fault.clone().unwrap(), e.targets.clone().unwrap()))
        .collect()
}

#[tokio::test]
async fn the_same_seed_plays_the_same_faults_and_every_one_is_undone() {
    let a = Double::default();
    let ha = play(&a, SCHEDULE, Duration::from_millis(700), false, "a").await;
    let b = Double::default();
    let hb = play(&b, SCHEDULE, Duration::from_millis(700), false, "b").await;
    assert_eq!(shape(&ha), shape(&hb), "same seed, same events");
    assert_eq!(a.log(), b.log());
    assert!(a.left().is_empty(), "left in effect: {:?}", a.left());

    // Worked out from the timeline: kills at 200 ms·n + jitter (n = 1..3 within 700 ms,
    // the third maybe not), the partition at 100 ms, the pause of the leader n3 at 500 ms,
    // healed when the clients stop at 700 ms.
    let s = Schedule::from_str(SCHEDULE, "t").unwrap();
    let plan = s.timeline(Duration::from_secs(20));
    let invokes: Vec<&Event> = ha
        .iter()
        .filter(|e| e.op == Op::Fault && e.kind == EventKind::Invoke)
        .collect();
    let due: Vec<&PlannedFault> = plan
        .iter()
        .filter(|p| p.at < Duration::from_millis(690))
        .collect();
    assert_eq!(invokes.len(), due.len(), "{invokes:?}");
    for (e, p) in invokes.iter().zip(&due) {
        let late = e.t_us as i64 - p.at.as_micros() as i64;
        assert!((0..60_000).contains(&late), "{e:?} vs {p:?}");
    }
    let pause = invokes
        .iter()
        .find(|e| e.fault.as_deref() == Some("pause-node"));
    assert_eq!(
        pause.unwrap().targets.as_deref(),
        Some(&["n3".to_string()][..])
    );
    // Minority of 5 is 2 nodes; halves of 5 name every node as cut.
    for e in &invokes {
        match e.fault.as_deref() {
            Some("kill") => assert_eq!(e.targets.as_ref().unwrap().len(), 2),
            Some("partition") => assert_eq!(e.targets.as_ref().unwrap().len(), 5),
            _ => {}
        }
    }
    // Every window: one invoke, then one ok.
    let oks = ha
        .iter()
        .filter(|e| e.op == Op::Fault && e.kind == EventKind::Ok)
        .count();
    assert_eq!(oks, invokes.len());
    // The pause (10 s long) was ended by the stop, after 700 ms and well before its end.
    let last = ha.iter().rev().find(|e| e.op == Op::Fault).unwrap();
    assert_eq!(
        (last.kind, last.fault.as_deref()),
        (EventKind::Ok, Some("pause-node"))
    );
    assert!((700_000..1_500_000).contains(&last.t_us), "{last:?}");
}

#[tokio::test]
async fn a_seed_changes_the_picks() {
    let other = SCHEDULE.replace("seed = 11", "seed = 12");
    let a = Double::default();
    let ha = play(&a, SCHEDULE, Duration::from_millis(450), false, "s11").await;
    let b = Double::default();
    let hb = play(&b, &other, Duration::from_millis(450), false, "s12").await;
    assert_ne!(a.log(), b.log(), "another seed picks other nodes");
    assert!(a.left().is_empty() && b.left().is_empty());
    assert!(!shape(&ha).is_empty() && !shape(&hb).is_empty());
}

#[tokio::test]
async fn cancelled_mid_fault_the_books_heal_everything() {
    // Every call takes 30 ms, so the drop at 640 ms lands inside a start or while faults are
    // in effect (the pause of n3 is: ends are due a duration after the effect, so the slow
    // calls push it later than its planned 500 ms).
    let d = Double {
        slow: Duration::from_millis(30),
        ..Double::default()
    };
    let h = play(&d, SCHEDULE, Duration::from_millis(640), true, "cancel").await;
    assert!(d.left().is_empty(), "left in effect: {:?}", d.left());
    let log = d.log();
    assert!(log.contains(&"pause n3".to_string()), "{log:?}");
    // Newest first: the pause (started last) is resumed before the kills still in effect
    // are restarted.
    let at = |s: &str| {
        log.iter()
            .rposition(|l| l == s)
            .unwrap_or_else(|| panic!("{s}: {log:?}"))
    };
    assert!(at("pause n3") < at("resume n3"), "{log:?}");
    assert!(
        log[at("resume n3")..]
            .iter()
            .skip(1)
            .all(|l| l.starts_with("restart")),
        "{log:?}"
    );
    // The heal after the drop has no history: the window of a fault in effect at the drop
    // stays open in it (the pause's on a quiet machine; on a loaded one the slow calls may
    // push the drop to before the pause was recorded, leaving a kill's open instead).
    let s = shape(&h);
    let last = s.last().expect("fault events before the drop");
    assert_eq!(last.0, EventKind::Invoke, "{s:?}");
    assert!(["pause-node", "kill"].contains(&last.1.as_str()), "{s:?}");
}

#[tokio::test]
async fn a_failed_start_is_undone_at_once_and_closed_as_info() {
    let d = Double {
        refuse: Some("n3".into()),
        ..Double::default()
    };
    let sched = "[[faults]]\nkind = \"pause-node\"\ntarget = \"leader\"\nstart = \"50ms\"\nduration = \"5s\"\n";
    let h = play(&d, sched, Duration::from_millis(200), false, "refuse").await;
    let f: Vec<&Event> = h.iter().filter(|e| e.op == Op::Fault).collect();
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[0].kind, EventKind::Invoke);
    assert_eq!(f[1].kind, EventKind::Info);
    let err = f[1].error.as_deref().unwrap();
    assert!(
        err.starts_with("start: ") && err.contains("n3 refuses"),
        "{err}"
    );
    // Undone at once (resuming n3 is harmless), not after the 5 s duration.
    assert!(f[1].t_us < 150_000, "{:?}", f[1]);
    assert!(d.left().is_empty());
}

#[tokio::test]
async fn a_fault_that_cannot_be_resolved_is_reported_and_touches_nothing() {
    let d = Double::default();
    let sched = "[[faults]]\nkind = \"pause-client\"\ntarget = \"random\"\nstart = \"20ms\"\nduration = \"1s\"\n";
    let h = play(&d, sched, Duration::from_millis(100), false, "noworkers").await;
    let f: Vec<&Event> = h.iter().filter(|e| e.op == Op::Fault).collect();
    assert_eq!(
        f.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [EventKind::Invoke, EventKind::Info]
    );
    assert!(
        f[1].error.as_deref().unwrap().contains("worker processes"),
        "{:?}",
        f[1]
    );
    assert!(d.log().is_empty());
}

#[test]
fn a_fast_clock_jumps_its_excess_every_tick() {
    // rate 1.5: 125 ms more every 250 ms.
    assert_eq!(
        ClockSkew::Fast { rate: 1.5 }.model(),
        Skew::Fast {
            every: Duration::from_millis(250),
            jump: Duration::from_millis(125)
        }
    );
    assert_eq!(
        ClockSkew::Jump {
            by: Duration::from_secs(3)
        }
        .model(),
        Skew::Jump(Duration::from_secs(3))
    );
}

#[tokio::test]
async fn a_partition_with_clients_cuts_them_off_with_one_servers_side() {
    let d = Double::default();
    let sched = "seed = 5\n[[faults]]\nkind = \"partition\"\nshape = \"halves\"\nclients = true\nstart = \"20ms\"\nduration = \"50ms\"\n";
    let h = play(&d, sched, Duration::from_millis(150), false, "clients").await;
    let f = shape(&h);
    assert_eq!(f.len(), 2, "{f:?}");
    let targets = &f[0].2;
    // Clients lose the links of the server they go with: every server of the other half.
    let clients: Vec<&String> = targets
        .iter()
        .filter(|t| t.starts_with("clients cut from "))
        .collect();
    assert_eq!(clients.len(), 1, "{targets:?}");
    let cut_from: Vec<&str> = clients[0]["clients cut from ".len()..].split(',').collect();
    // One half of five (2 or 3 servers), and the clients' side is the other: what a server
    // there is cut from is exactly what the clients are cut from.
    assert!(matches!(cut_from.len(), 2 | 3), "{targets:?}");
    let home = (1..=5)
        .map(|i| format!("n{i}"))
        .find(|n| !cut_from.contains(&n.as_str()))
        .unwrap();
    let home_line = targets
        .iter()
        .find(|t| t.starts_with(&format!("{home} cut from")))
        .unwrap();
    assert_eq!(
        home_line[format!("{home} cut from ").len()..]
            .split(',')
            .collect::<Vec<_>>(),
        cut_from
    );
    for n in &cut_from {
        let line = targets
            .iter()
            .find(|t| t.starts_with(&format!("{n} cut from")))
            .unwrap();
        assert!(
            line.contains("clients"),
            "{n} must drop the clients too: {targets:?}"
        );
    }
    // Without `clients` nobody names them.
    let sched = sched.replace("clients = true\n", "");
    let h = play(&d, &sched, Duration::from_millis(150), false, "noclients").await;
    assert!(
        shape(&h)[0].2.iter().all(|t| !t.contains("clients")),
        "{:?}",
        shape(&h)
    );
}

#[tokio::test]
async fn a_slow_start_keeps_its_full_duration_and_the_end_says_when_it_took_effect() {
    // Every call takes 60 ms: the pause asked for at 100 ms is in effect at about 160 ms, and
    // its 200 ms count from there, not from the plan.
    let d = Double {
        slow: Duration::from_millis(60),
        ..Double::default()
    };
    let schedule = "seed = 1\n[[faults]]\nkind = \"pause-node\"\ntarget = \"leader\"\n\
                    start = \"100ms\"\nduration = \"200ms\"\n";
    let h = play(
        &d,
        schedule,
        Duration::from_millis(700),
        false,
        "slow-start",
    )
    .await;
    let faults: Vec<&Event> = h.iter().filter(|e| e.op == Op::Fault).collect();
    assert_eq!(faults.len(), 2, "{faults:?}");
    let (invoke, end) = (faults[0], faults[1]);
    assert_eq!((invoke.kind, end.kind), (EventKind::Invoke, EventKind::Ok));
    assert_eq!(end.fault.as_deref(), Some("pause-node"));
    let effect = end.effect_us.expect("effect_us on the end");
    let undo = end.undo_us.expect("undo_us on the end");
    assert!(
        effect >= invoke.t_us + 60_000,
        "the pause took 60 ms: {end:?}"
    );
    assert!(
        undo >= effect + 200_000,
        "the full 200 ms after the effect: {end:?}"
    );
    assert!(end.t_us >= undo + 60_000, "the resume took 60 ms: {end:?}");
    assert_eq!(end.effect, None, "a pause needs no words");
}

#[test]
fn the_holder_check_sees_a_release_recorded_since_the_pick() {
    use crate::history::{Event, EventKind, Op};
    let grant = |t, c, key| {
        let mut e = Event::new(t, c, EventKind::Ok, Op::Acquire, key);
        (e.token, e.ttl_ms) = (Some(1), Some(1000));
        e
    };
    let release = |t, c, key| Event::new(t, c, EventKind::Invoke, Op::Release, key);
    let (tx, mut rx) = tokio::sync::broadcast::channel(16);
    let mut holders = Holders::default();
    tx.send(grant(10, 1, "k")).unwrap();
    tx.send(grant(20, 4, "j")).unwrap();
    holders.catch_up(&mut rx);
    assert_eq!(holders.list(), [1, 4]);
    // Worker 0 runs clients 0 and 1: it holds. Then client 1 starts its release before the
    // SIGSTOP: the worker no longer holds, and the pause must pick again.
    assert!(holders.any_of(&[0, 1]));
    tx.send(release(30, 1, "k")).unwrap();
    holders.catch_up(&mut rx);
    assert!(!holders.any_of(&[0, 1]));
    assert!(holders.any_of(&[4, 5]));
    // Client 4 writes its work back: still granted, but past its critical section.
    let mut write = Event::new(40, 4, EventKind::Ok, Op::Write, "j");
    (write.token, write.value) = (Some(1), Some(1));
    tx.send(write).unwrap();
    holders.catch_up(&mut rx);
    assert!(!holders.any_of(&[4, 5]));
}

/// Worker processes that run `clients[i]`; `on_first_pause` records events into the history at
/// the first SIGSTOP, as a worker's last events do that were written just before the stop and
/// arrive after the nemesis' check.
struct Stopping {
    clients: Vec<Vec<u32>>,
    history: HistoryHandle,
    on_first_pause: StdMutex<Vec<Event>>,
    log: StdMutex<Vec<String>>,
}

impl std::fmt::Debug for Stopping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stopping")
            .field("clients", &self.clients)
            .finish()
    }
}

impl WorkerProcesses for Stopping {
    fn count(&self) -> usize {
        self.clients.len()
    }
    fn running(&self, i: usize) -> bool {
        i < self.clients.len()
    }
    fn clients(&self, i: usize) -> &[u32] {
        self.clients.get(i).map_or(&[], |c| c)
    }
    fn pause(&self, i: usize) -> Result<(), String> {
        self.log.lock().unwrap().push(format!("stop {i}"));
        for e in self.on_first_pause.lock().unwrap().drain(..) {
            crate::history::EventSink::record(&self.history, e);
        }
        Ok(())
    }
    fn resume(&self, i: usize) -> Result<(), String> {
        self.log.lock().unwrap().push(format!("cont {i}"));
        Ok(())
    }
}

#[tokio::test]
async fn a_holder_pause_that_stopped_a_release_is_thawed_at_once_and_tried_again() {
    let path = scratch("missed-hold");
    let recorder = Recorder::create(&path).unwrap();
    let clock = recorder.clock();
    let grant = |c: u32| {
        let mut e = Event::new(clock.now_us(), c, EventKind::Ok, Op::Acquire, "k");
        (e.token, e.ttl_ms) = (Some(u64::from(c) + 1), Some(1000));
        e
    };
    // Client 0 (worker 0) holds. It begins its release just before its worker's SIGSTOP, and
    // that event arrives after the nemesis' check; meanwhile client 2 (worker 1) is granted.
    let workers = Arc::new(Stopping {
        clients: vec![vec![0, 1], vec![2, 3]],
        history: recorder.handle(),
        on_first_pause: StdMutex::new(vec![
            Event::new(clock.now_us(), 0, EventKind::Invoke, Op::Release, "k"),
            grant(2),
        ]),
        log: StdMutex::default(),
    });
    crate::history::EventSink::record(&recorder.handle(), grant(0));
    let schedule = "seed = 1\n[[faults]]\nkind = \"pause-client\"\ntarget = \"holder\"\n\
                    start = \"100ms\"\nduration = \"300ms\"\n";
    let on = Double::default();
    let run = Duration::from_millis(900);
    let stand: Arc<dyn WorkerProcesses> = workers.clone();
    let h = play_on(&on, schedule, run, false, (path, recorder), Some(stand)).await;
    // Worker 0 was stopped, found to have begun its release before the stop, and thawed at
    // once; then worker 1, whose client held, was stopped for the pause's full duration.
    assert_eq!(
        *workers.log.lock().unwrap(),
        ["stop 0", "cont 0", "stop 1", "cont 1"]
    );
    let faults: Vec<_> = h.iter().filter(|e| e.op == Op::Fault).collect();
    let kinds: Vec<_> = faults.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Invoke,
            EventKind::Info,
            EventKind::Invoke,
            EventKind::Ok
        ],
        "{faults:#?}"
    );
    assert_eq!(faults[1].error.as_deref(), Some(books::MISSED_THE_HOLD));
    assert_eq!(
        faults[0].targets,
        Some(vec!["worker0".into(), "client0".into(), "client1".into()])
    );
    assert_eq!(
        faults[2].targets,
        Some(vec!["worker1".into(), "client2".into(), "client3".into()])
    );
    // The kept pause lasted its 300 ms from when it took effect.
    let (from, to) = (faults[2].t_us, faults[3].t_us);
    assert!(to - from >= 300_000, "{from}..{to}");
}

/// One fault window as the checkers pair it: its kind and targets, its invoke, its outcome's
/// kind and time, and the effect the outcome reports (µs).
#[derive(Debug)]
struct Window {
    kind: String,
    targets: Vec<String>,
    invoke_us: u64,
    outcome: EventKind,
    outcome_us: u64,
    effect_us: Option<u64>,
}

/// Every fault window, each `invoke` paired with the next end of the same kind and targets.
fn windows(h: &[Event]) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    for e in h.iter().filter(|e| e.op == Op::Fault) {
        let (kind, targets) = (e.fault.clone().unwrap(), e.targets.clone().unwrap());
        if e.kind == EventKind::Invoke {
            pending.push(out.len());
            out.push(Window {
                kind,
                targets,
                invoke_us: e.t_us,
                outcome: EventKind::Invoke,
                outcome_us: 0,
                effect_us: None,
            });
            continue;
        }
        let k = pending
            .iter()
            .position(|&w| out[w].kind == kind && out[w].targets == targets)
            .expect("an end with no open start");
        let w = &mut out[pending.remove(k)];
        (w.outcome, w.outcome_us, w.effect_us) = (e.kind, e.t_us, e.effect_us);
    }
    out
}

/// A restarted node slow to serve holds its kill window open past the next occurrence's time:
/// that occurrence waits for the window to close instead of killing again beside it (which
/// the engine refuses for a node still down, and whose undo then restarted the node early).
#[tokio::test]
async fn a_kill_whose_rejoin_runs_long_delays_the_next_kill_of_its_entry() {
    let on = Double {
        rejoin: Duration::from_millis(500),
        ..Double::default()
    };
    let schedule = "seed = 5\n[[faults]]\nkind = \"kill\"\ntarget = \"leader\"\nevery = \"200ms\"\nrestart_after = \"100ms\"\n";
    let h = play(
        &on,
        schedule,
        Duration::from_millis(1700),
        false,
        "long-rejoin",
    )
    .await;
    assert!(
        !on.log().iter().any(|l| l.ends_with("refused")),
        "a kill of a node still down: {:?}",
        on.log()
    );
    let w = windows(&h);
    assert!(w.len() >= 2, "{w:?}");
    for pair in w.windows(2) {
        let (first, next) = (&pair[0], &pair[1]);
        assert_eq!(first.outcome, EventKind::Ok, "{first:?}");
        // Closed once n3 served again, about 500 ms after its restart, before the next began.
        assert!(first.outcome_us >= first.invoke_us + 550_000, "{first:?}");
        assert!(
            next.invoke_us >= first.outcome_us,
            "overlapping windows: {first:?} then {next:?}"
        );
    }
    // The effect a window reports is its own, after its own invoke.
    for x in &w {
        assert!(x.effect_us.is_none_or(|e| e >= x.invoke_us), "{x:?}");
    }
    assert!(on.left().is_empty(), "left in effect: {:?}", on.left());
}

/// A window of the same kind and targets as one still open, from another entry, is not
/// started: it is recorded as a window with no targets that says why.
#[tokio::test]
async fn a_second_kill_of_a_node_already_down_is_not_started() {
    let on = Double::default();
    let schedule = "seed = 5\n[[faults]]\nkind = \"kill\"\ntarget = \"leader\"\nstart = \"50ms\"\nrestart_after = \"400ms\"\n\
                    [[faults]]\nkind = \"kill\"\ntarget = \"leader\"\nstart = \"150ms\"\nrestart_after = \"100ms\"\n";
    let h = play(&on, schedule, Duration::from_millis(800), false, "twice").await;
    assert_eq!(
        on.log(),
        ["kill n3", "restart n3"],
        "the second kill touched n3"
    );
    let w = windows(&h);
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!(
        (w[0].targets.as_slice(), w[0].outcome),
        (&["n3".to_string()][..], EventKind::Ok)
    );
    // Closed at its own restart (400 ms after its effect), not at the second window's.
    assert!(
        w[0].outcome_us >= w[0].effect_us.unwrap() + 400_000,
        "{w:?}"
    );
    assert_eq!(
        (w[1].kind.as_str(), w[1].targets.len(), w[1].outcome),
        ("kill", 0, EventKind::Info),
        "{w:?}"
    );
    let why = h
        .iter()
        .find_map(|e| e.error.clone())
        .expect("the not-started window's reason");
    assert!(
        why.contains("kill of n3 is still in effect") && why.contains("not started twice"),
        "{why}"
    );
}
