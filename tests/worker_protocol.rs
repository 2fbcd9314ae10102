//! The runner's side of `lockbench worker` processes without Docker: stand-in workers (small
//! shell scripts that speak the line protocol) show that the runner records what workers send,
//! opens a stampede round only once every client of the cell arrived, tells workers to stop at
//! the cell's acquisitions, pauses and resumes a worker as a whole, reports a worker that dies
//! with its stderr, and kills and reaps every worker when it is dropped; that the register
//! lives in the runner and answers a worker's accesses, recording them itself.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use lockbench::System;
use lockbench::cluster::ConnectInfo;
use lockbench::history::{EventKind, Op, Recorder, read_history};
use lockbench::recipe::{RecipeConfig, Strategy};
use lockbench::resource::Register;
use lockbench::runner::{WorkerError, WorkerPlan, WorkerState, WorkerTarget, Workers};
use lockbench::workload::{ClientsAs, Workload};

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-wp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// An executable shell script standing in for `lockbench worker`.
fn script(dir: &std::path::Path, body: &str) -> PathBuf {
    let p = dir.join("fake-worker");
    std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn target(exe: PathBuf) -> WorkerTarget {
    WorkerTarget {
        exe,
        cluster: ConnectInfo {
            system: System::Redis,
            endpoints: vec!["127.0.0.1:1".into()],
            sentinel_endpoints: vec![],
            address_map: Default::default(),
            master_name: None,
        },
    }
}

fn plan(workload: &str, per_process: u32) -> WorkerPlan {
    let workload = Workload::from_str(workload, "fake").unwrap();
    WorkerPlan {
        recipe: RecipeConfig::default(),
        workload,
        strategy: Strategy::Predecessor,
        per_process,
    }
}

/// The cell's register as `run_clients` makes it: the workload's mode, recording into the
/// cell's history.
fn register(recorder: &Recorder, p: &WorkerPlan) -> Register {
    Register::new(p.workload.resource, std::sync::Arc::new(recorder.handle()))
}

/// Reads the setup, says ready, waits for start; `$clients` holds its client ids.
const HANDSHAKE: &str = r#"
read setup
clients=$(echo "$setup" | sed 's/.*"clients":\[\([0-9,]*\)\].*/\1/' | tr , ' ')
echo '{"ready":{"pid":'$$'}}'
read start
"#;

/// The process state letter from /proc (R, S, T for stopped, Z, ...), `None` once it is gone.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the command name in parentheses.
    stat.rsplit_once(") ")?.1.chars().next()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_open_when_every_client_arrived_and_stop_follows_the_acquisitions() {
    let dir = scratch("rounds");
    // Each client: invoke and ok an acquisition, then arrive at round 0. On `open`, a release
    // invoke per client shows the round reached it; on `stop`, it is done.
    let exe = script(
        &dir,
        &format!(
            r#"{HANDSHAKE}
for c in $clients; do
  echo '{{"event":{{"t_us":10,"process":'$c',"kind":"invoke","op":"acquire","key":"k"}}}}'
  echo '{{"event":{{"t_us":20,"process":'$c',"kind":"ok","op":"acquire","key":"k","token":'$c'}}}}'
  echo '{{"arrive":{{"client":'$c',"round":0}}}}'
done
opened=0; stopped=0
while [ $opened = 0 ] || [ $stopped = 0 ]; do
  read msg || exit 9
  case "$msg" in
    *open*) opened=1
      for c in $clients; do
        echo '{{"event":{{"t_us":30,"process":'$c',"kind":"invoke","op":"release","key":"k"}}}}'
      done ;;
    *stop*) stopped=1 ;;
  esac
done
echo '"done"'
"#
        ),
    );
    let p = plan(
        "clients = 5\nacquisitions = 5\nclients_as = \"processes\"\nclients_per_process = 2",
        2,
    );
    assert_eq!(
        p.workload.clients_as,
        ClientsAs::Processes { per_process: 2 }
    );
    let mut workers = Workers::spawn(&target(exe), &p).await.expect("spawn");
    let control = workers.control();
    assert_eq!(control.len(), 3, "5 clients, 2 per process");
    assert_eq!(
        (control.clients(0), control.clients(2)),
        (&[0, 1][..], &[4][..])
    );
    assert_eq!(control.worker_of(3), Some(1));
    let path = dir.join("history.jsonl");
    let recorder = Recorder::create(&path).unwrap();
    workers.start(recorder.clock()).await;
    let ran = tokio::time::timeout(
        Duration::from_secs(20),
        workers.run(&recorder.handle(), &p.workload, &register(&recorder, &p)),
    )
    .await
    .expect("the workers finish")
    .expect("run");
    assert!(ran.stuck.is_empty(), "{ran:?}");
    for i in 0..3 {
        assert_eq!(control.state(i), Some(WorkerState::Exited));
    }
    drop(workers);
    recorder.finish().await.unwrap();
    let events = read_history(&path).unwrap();
    let count = |op, kind| {
        events
            .iter()
            .filter(|e| (e.op, e.kind) == (op, kind))
            .count()
    };
    assert_eq!(count(Op::Acquire, EventKind::Ok), 5);
    // The round opened (every worker got `open`), and only after all five arrived.
    assert_eq!(count(Op::Release, EventKind::Invoke), 5);
    let first_release = events.iter().position(|e| e.op == Op::Release).unwrap();
    let last_ok = events
        .iter()
        .rposition(|e| (e.op, e.kind) == (Op::Acquire, EventKind::Ok))
        .unwrap();
    assert!(last_ok < first_release, "{events:?}");
    // Times are the workers' own stamps, not the arrival times.
    assert!(events.iter().all(|e| [10, 20, 30].contains(&e.t_us)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_paused_and_resumed_as_a_whole_and_dropping_reaps_it() {
    let dir = scratch("pause");
    let exe = script(&dir, &format!("{HANDSHAKE}\nexec sleep 60\n"));
    let p = plan("clients = 1\nduration = \"30s\"", 1);
    let mut workers = Workers::spawn(&target(exe), &p).await.expect("spawn");
    let control = workers.control();
    let recorder = Recorder::create(&dir.join("history.jsonl")).unwrap();
    workers.start(recorder.clock()).await;
    let pid = control.pids()[0];
    // `exec` keeps the pid: wait until the script has become `sleep`.
    let wait_state = |want: &[char]| {
        for _ in 0..200 {
            if proc_state(pid).is_some_and(|s| want.contains(&s)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("pid {pid} never reached {want:?}: {:?}", proc_state(pid));
    };
    wait_state(&['S']);
    control.pause(0).unwrap();
    wait_state(&['T']);
    assert_eq!(control.state(0), Some(WorkerState::Paused));
    control.resume(0).unwrap();
    wait_state(&['S', 'R']);
    control.pause(0).unwrap();
    wait_state(&['T']);
    assert!(matches!(
        control.pause(7),
        Err(WorkerError::NoSuchWorker { index: 7, count: 1 })
    ));
    // Dropped while stopped: SIGKILL still ends it, and the reap leaves no zombie.
    drop(workers);
    assert_eq!(proc_state(pid), None, "pid {pid} is gone, not a zombie");
    let e = control.resume(0).unwrap_err().to_string();
    assert!(e.contains("has exited; it cannot be resumed"), "{e}");
    drop(recorder);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_dies_is_an_error_showing_its_stderr() {
    let dir = scratch("dies");
    let p = plan("clients = 2\nduration = \"30s\"", 1);
    // Before ready.
    let exe = script(
        &dir,
        "read setup\necho 'cannot reach the moon' >&2\nexit 4\n",
    );
    let e = Workers::spawn(&target(exe), &p)
        .await
        .err()
        .expect("a worker that exits is an error")
        .to_string();
    assert!(
        e.contains("ended without finishing (exit status: 4)")
            && e.contains("cannot reach the moon"),
        "{e}"
    );
    // While running, after some events.
    let exe = script(
        &dir,
        &format!(
            "{HANDSHAKE}\necho '{{\"event\":{{\"t_us\":5,\"process\":'$clients',\"kind\":\"invoke\",\"op\":\"acquire\",\"key\":\"k\"}}}}'\necho 'lost my mind' >&2\nkill -9 $$\n"
        ),
    );
    let mut workers = Workers::spawn(&target(exe), &p).await.expect("spawn");
    let path = dir.join("history.jsonl");
    let recorder = Recorder::create(&path).unwrap();
    workers.start(recorder.clock()).await;
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        workers.run(&recorder.handle(), &p.workload, &register(&recorder, &p)),
    )
    .await
    .expect("an early end is an error, not a hang")
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("ended without finishing")
            && e.contains("signal: 9")
            && e.contains("lost my mind"),
        "{e}"
    );
    drop(workers);
    recorder.finish().await.unwrap();
    assert!(
        !read_history(&path).unwrap().is_empty(),
        "what came first is kept"
    );
    // A setup failure said on stdout.
    let exe = script(
        &dir,
        "read setup\necho '{\"failed\":{\"error\":\"client 0 could not connect\"}}'\n",
    );
    let e = Workers::spawn(&target(exe), &p)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("failed: client 0 could not connect"), "{e}");
    // Not a worker at all.
    let exe = script(&dir, "read setup\necho hello\n");
    let e = Workers::spawn(&target(exe), &p)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("broke the protocol") && e.contains("hello"),
        "{e}"
    );
    let e = Workers::spawn(&target(dir.join("missing")), &p)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("cannot start worker process") && e.contains("missing"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_mock_refuses_worker_processes_and_says_why() {
    use lockbench::plan::Cell;
    use lockbench::recipe::mock::MockOptions;
    use lockbench::runner::{MockBackend, run_clients};
    let dir = scratch("mock");
    let backend = MockBackend::new(MockOptions::default());
    let cell = Cell {
        version: None,
        system: System::Redis,
        strategy: Strategy::Herd,
        workload: Workload::from_str(
            "clients = 2\nduration = \"1s\"\nclients_as = \"processes\"",
            "mock",
        )
        .unwrap(),
        chaos: lockbench::nemesis::schedule::Schedule::none(),
        repetition: None,
        library: None,
    };
    let service = lockbench::recipe::mock::MockService::new(MockOptions::default());
    let e = run_clients(
        &backend,
        &service,
        &cell,
        "/t",
        &dir.join("history.jsonl"),
        |_| async {},
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("clients_as = \"processes\" needs real clusters")
            && e.contains("use clients_as = \"tasks\""),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_left_stopped_past_the_cell_is_killed_and_its_clients_listed_stuck() {
    let dir = scratch("stuck");
    let exe = script(
        &dir,
        &format!(
            "{HANDSHAKE}\necho '{{\"event\":{{\"t_us\":5,\"process\":0,\"kind\":\"invoke\",\"op\":\"acquire\",\"key\":\"k\"}}}}'\nexec sleep 60\n"
        ),
    );
    // The shortest cell: 1 s, plus the grace of acquire timeout + resolve timeout + lease TTL
    // + 10 s.
    let p = plan(
        "clients = 1\nduration = \"1s\"\nacquire_timeout = \"1ms\"\nlease_ttl = \"1s\"\nresolve_timeout = \"0s\"",
        1,
    );
    let mut workers = Workers::spawn(&target(exe), &p).await.expect("spawn");
    let control = workers.control();
    let pid = control.pids()[0];
    let path = dir.join("history.jsonl");
    let recorder = Recorder::create(&path).unwrap();
    workers.start(recorder.clock()).await;
    // Once it has written its event and become `sleep`, a nemesis stops it and never
    // resumes it.
    let cmdline = || std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    for _ in 0..500 {
        if cmdline().starts_with("sleep") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(cmdline().starts_with("sleep"), "{:?}", cmdline());
    control.pause(0).unwrap();
    let t = std::time::Instant::now();
    let ran = tokio::time::timeout(
        Duration::from_secs(30),
        workers.run(&recorder.handle(), &p.workload, &register(&recorder, &p)),
    )
    .await
    .expect("the cell ends at its deadline")
    .expect("a stuck worker is no error");
    let took = t.elapsed();
    assert_eq!(ran.stuck, vec![0]);
    assert!(
        (Duration::from_secs(11)..Duration::from_secs(20)).contains(&took),
        "{took:?}"
    );
    assert_eq!(control.state(0), Some(WorkerState::Exited));
    assert_eq!(proc_state(pid), None, "killed and reaped");
    drop(workers);
    recorder.finish().await.unwrap();
    assert_eq!(read_history(&path).unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_applies_and_answers_worker_accesses_and_records_them() {
    let dir = scratch("access");
    // Client 0 (token 5) reads, writes what it read plus one, reads again; client 1 with the
    // superseded token 4 is then refused. Each reply is checked by the script, which gives up
    // (exit 9, an error for the runner) on any surprise.
    let exe = script(
        &dir,
        &format!(
            r#"{HANDSHAKE}
echo '{{"access":{{"id":0,"client":0,"key":"k","token":5,"op":"read"}}}}'
read reply
v=$(echo "$reply" | sed -n 's/.*"id":0,"result":{{"ok":\([0-9]*\)}}.*/\1/p')
[ -n "$v" ] || {{ echo "bad reply to the read: $reply" >&2; exit 9; }}
echo '{{"access":{{"id":1,"client":0,"key":"k","token":5,"op":"write","value":'$((v + 1))'}}}}'
read reply
case "$reply" in *'"id":1,"result":{{"ok":1}}'*) ;; *) echo "write: $reply" >&2; exit 9 ;; esac
echo '{{"access":{{"id":2,"client":1,"key":"k","token":4,"op":"read"}}}}'
read reply
case "$reply" in *'"id":2,"result":{{"refused":{{"key":"k","token":4,"highest":5}}'*) ;; *) echo "stale: $reply" >&2; exit 9 ;; esac
echo '"done"'
"#
        ),
    );
    let p = plan("clients = 2\nduration = \"30s\"\nresource = \"fenced\"", 2);
    let mut workers = Workers::spawn(&target(exe), &p).await.expect("spawn");
    let path = dir.join("history.jsonl");
    let recorder = Recorder::create(&path).unwrap();
    let register = register(&recorder, &p);
    workers.start(recorder.clock()).await;
    let ran = tokio::time::timeout(
        Duration::from_secs(20),
        workers.run(&recorder.handle(), &p.workload, &register),
    )
    .await
    .expect("the worker finishes")
    .expect("every reply was what the script expected");
    assert!(ran.stuck.is_empty());
    assert_eq!((register.value("k"), register.refused()), (1, 1));
    drop(workers);
    recorder.finish().await.unwrap();
    // The register recorded the accesses on the runner's side, in the order they took effect.
    let got: Vec<_> = read_history(&path)
        .unwrap()
        .into_iter()
        .map(|e| (e.client(), e.op, e.kind, e.token, e.value))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(0), Op::Read, EventKind::Ok, Some(5), Some(0)),
            (Some(0), Op::Write, EventKind::Ok, Some(5), Some(1)),
            (Some(1), Op::Read, EventKind::Fail, Some(4), None),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_for_a_client_the_worker_does_not_run_is_a_protocol_error() {
    let dir = scratch("foreign");
    let exe = script(
        &dir,
        &format!(
            "{HANDSHAKE}\necho '{{\"access\":{{\"id\":0,\"client\":7,\"key\":\"k\",\"token\":1,\"op\":\"read\"}}}}'\nexec sleep 30\n"
        ),
    );
    let p = plan("clients = 1\nduration = \"30s\"", 1);
    let mut workers = Workers::spawn(&target(exe), &p).await.expect("spawn");
    let recorder = Recorder::create(&dir.join("history.jsonl")).unwrap();
    let register = register(&recorder, &p);
    workers.start(recorder.clock()).await;
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        workers.run(&recorder.handle(), &p.workload, &register),
    )
    .await
    .expect("refused at once")
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("broke the protocol: an access by client 7"),
        "{e}"
    );
    // Nothing was applied for it.
    assert_eq!(register.refused(), 0);
    drop(workers);
    let _ = std::fs::remove_dir_all(&dir);
}
