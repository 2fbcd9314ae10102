//! The `lockbench worker` side: connect the clients the setup names, wait for the cell's start,
//! run the same client loop as in-process clients, and stream every event to stdout.
//!
//! Stdin and stdout are served by plain threads rather than tokio's, whose blocking stdin read
//! cannot be cancelled and would hold up the exit; the worker leaves by `process::exit` once
//! its last line is written.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::protocol::{FromWorker, Setup, ToWorker, line};
use super::remote::{ACCESS_TIMEOUT, RemoteRegister};
use crate::history::{Clock, Event, EventSink};
use crate::recipe::Recipe;
use crate::runner::client::{CellShared, Resource, Rounds, drive};
use crate::workload::Workload;

/// How long a worker waits for its setup line (the runner writes it right after spawning).
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Exit code: every client ran and stopped.
pub const EXIT_OK: i32 = 0;
/// Exit code: the setup could not be read or a client could not connect (said on stdout as
/// `failed`), or the runner sent something a worker does not understand.
pub const EXIT_FAILED: i32 = 2;
/// Exit code: the runner went away (stdin or stdout closed).
pub const EXIT_RUNNER_GONE: i32 = 3;

/// What the stdin thread hands over.
enum Input {
    Msg(ToWorker),
    Bad(String),
    Gone,
}

/// Reads runner messages on a thread of its own.
fn read_stdin() -> mpsc::UnboundedReceiver<Input> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut lines = stdin.lock();
        let mut text = String::new();
        loop {
            text.clear();
            let msg = match lines.read_line(&mut text) {
                Ok(0) | Err(_) => Input::Gone,
                Ok(_) => match serde_json::from_str::<ToWorker>(&text) {
                    Ok(m) => Input::Msg(m),
                    Err(e) => Input::Bad(format!("{e}: {}", text.trim_end())),
                },
            };
            let gone = matches!(msg, Input::Gone);
            if tx.send(msg).is_err() || gone {
                return;
            }
        }
    });
    rx
}

enum Out {
    Msg(FromWorker),
    Close,
}

/// Writes worker messages on a thread of its own, batching whatever queued up meanwhile into
/// one write, so a client never waits on the pipe.
struct Output {
    tx: std_mpsc::Sender<Out>,
    thread: std::thread::JoinHandle<()>,
}

impl Output {
    fn start() -> Output {
        let (tx, rx) = std_mpsc::channel::<Out>();
        let thread = std::thread::spawn(move || {
            let stdout = std::io::stdout();
            let mut w = stdout.lock();
            let mut batch = Vec::new();
            let mut closing = false;
            while !closing {
                let Ok(first) = rx.recv() else { return };
                batch.clear();
                for out in std::iter::once(first).chain(rx.try_iter()) {
                    match out {
                        Out::Msg(m) => match line(&m) {
                            Ok(l) => batch.extend_from_slice(&l),
                            Err(e) => eprintln!("lockbench worker: dropped a message: {e}"),
                        },
                        Out::Close => {
                            closing = true;
                            break;
                        }
                    }
                }
                if w.write_all(&batch).and_then(|()| w.flush()).is_err() {
                    // Nobody reads our events any more: the runner is gone.
                    std::process::exit(EXIT_RUNNER_GONE);
                }
            }
        });
        Output { tx, thread }
    }

    fn send(&self, msg: FromWorker) {
        let _ = self.tx.send(Out::Msg(msg));
    }

    /// Writes everything sent so far and stops the thread.
    fn finish(self) {
        let _ = self.tx.send(Out::Close);
        let _ = self.thread.join();
    }
}

/// A worker's clients' way into the runner's history: stamped here, on the cell's clock.
struct LineSink {
    clock: Clock,
    tx: std_mpsc::Sender<Out>,
}

impl EventSink for LineSink {
    fn clock(&self) -> Clock {
        self.clock
    }
    fn record(&self, event: Event) {
        let _ = self.tx.send(Out::Msg(FromWorker::Event(Box::new(event))));
    }
}

/// Why a worker stops early.
enum Failure {
    /// Said to the runner as `failed`.
    Setup(String),
    /// Nobody to say it to.
    RunnerGone,
    /// A client task panicked (its message is on stderr): no `done`, so the runner reports
    /// the worker as ended early, with its stderr.
    Crashed,
}

/// Runs a worker on this process's stdin and stdout and returns its exit code; the caller
/// exits with it (`process::exit`: the stdin thread may still be blocked in a read).
pub async fn serve() -> i32 {
    let out = Output::start();
    let code = match run(&out, read_stdin()).await {
        Ok(()) => {
            out.send(FromWorker::Done);
            EXIT_OK
        }
        Err(Failure::Setup(error)) => {
            eprintln!("lockbench worker: {error}");
            out.send(FromWorker::Failed { error });
            EXIT_FAILED
        }
        Err(Failure::RunnerGone) => EXIT_RUNNER_GONE,
        Err(Failure::Crashed) => EXIT_FAILED,
    };
    out.finish();
    code
}

async fn next(input: &mut mpsc::UnboundedReceiver<Input>) -> Result<ToWorker, Failure> {
    match input.recv().await {
        Some(Input::Msg(m)) => Ok(m),
        Some(Input::Bad(text)) => Err(Failure::Setup(format!(
            "not a runner message: {text} (is the worker binary the same build as the runner?)"
        ))),
        Some(Input::Gone) | None => Err(Failure::RunnerGone),
    }
}

async fn run(out: &Output, mut input: mpsc::UnboundedReceiver<Input>) -> Result<(), Failure> {
    let setup = match tokio::time::timeout(SETUP_TIMEOUT, next(&mut input)).await {
        Err(_) => {
            return Err(Failure::Setup(format!(
                "no setup line on stdin within {SETUP_TIMEOUT:?}: `lockbench worker` is started \
                 by `lockbench run --clients-as processes`, not by hand"
            )));
        }
        Ok(Ok(ToWorker::Setup(s))) => s,
        Ok(Ok(other)) => {
            return Err(Failure::Setup(format!(
                "expected the setup line first, got {other:?}"
            )));
        }
        Ok(Err(e)) => return Err(e),
    };
    let Setup {
        cluster,
        recipe,
        workload,
        strategy,
        clients,
    } = *setup;
    let workload = Workload::from_str(&workload, "the runner's setup line")
        .map_err(|e| Failure::Setup(e.to_string()))?;
    let mut recipes = Vec::new();
    for &id in &clients {
        match crate::service::connect_to(&cluster, recipe.clone()).await {
            Ok(r) => recipes.push((id, r)),
            Err(e) => {
                for (_, r) in recipes {
                    r.crash().await;
                }
                return Err(Failure::Setup(format!(
                    "client {id} could not connect to {}: {e}",
                    cluster.system
                )));
            }
        }
    }
    out.send(FromWorker::Ready {
        pid: std::process::id(),
    });
    let epoch_ns = match next(&mut input).await? {
        ToWorker::Start { epoch_ns } => epoch_ns,
        other => {
            return Err(Failure::Setup(format!(
                "expected start after ready, got {other:?}"
            )));
        }
    };
    let clock = Clock::from_epoch_ns(epoch_ns).ok_or_else(|| {
        Failure::Setup(format!(
            "start epoch {epoch_ns} ns is no reading of this machine's monotonic clock: the \
             runner and its workers must run on one machine"
        ))
    })?;
    let sink = Arc::new(LineSink {
        clock,
        tx: out.tx.clone(),
    });
    let (opened_tx, opened) = watch::channel(0u64);
    let rounds = workload.stampede.map(|_| {
        let tx = out.tx.clone();
        Rounds::Remote {
            arrive: Box::new(move |client, round| {
                let _ = tx.send(Out::Msg(FromWorker::Arrive { client, round }));
            }),
            opened,
        }
    });
    let register = {
        let tx = out.tx.clone();
        Arc::new(RemoteRegister::new(
            Box::new(move |m| {
                let _ = tx.send(Out::Msg(m));
            }),
            ACCESS_TIMEOUT,
        ))
    };
    let shared = Arc::new(CellShared::new(
        workload,
        strategy,
        sink,
        rounds,
        Resource::Remote(register.clone()),
    ));
    let control = tokio::spawn(control(input, shared.clone(), opened_tx, register));
    let tasks: Vec<_> = recipes
        .into_iter()
        .map(|(id, r)| tokio::spawn(drive(r, id, shared.clone())))
        .collect();
    let mut panicked = false;
    let mut finished = Vec::new();
    for t in tasks {
        match t.await {
            Ok(r) => finished.push(r),
            // The panic message is on stderr already; the runner shows it.
            Err(_) => panicked = true,
        }
    }
    // As the runner ends its own clients: cleanly, together, each bounded by one deadline.
    futures::future::join_all(finished.into_iter().map(Recipe::close)).await;
    control.abort();
    if panicked {
        return Err(Failure::Crashed);
    }
    Ok(())
}

/// Applies the runner's messages while the clients run.
async fn control(
    mut input: mpsc::UnboundedReceiver<Input>,
    shared: Arc<CellShared>,
    opened: watch::Sender<u64>,
    register: Arc<RemoteRegister>,
) {
    loop {
        match input.recv().await {
            Some(Input::Msg(ToWorker::Stop)) => shared.stop.store(true, Ordering::Relaxed),
            Some(Input::Msg(ToWorker::Accessed { id, result })) => register.answer(id, result),
            Some(Input::Msg(ToWorker::Open { round })) => {
                opened.send_modify(|o| *o = (*o).max(round + 1));
            }
            Some(Input::Msg(other)) => {
                eprintln!("lockbench worker: unexpected runner message while running: {other:?}");
                std::process::exit(EXIT_FAILED);
            }
            Some(Input::Bad(text)) => {
                eprintln!("lockbench worker: not a runner message: {text}");
                std::process::exit(EXIT_FAILED);
            }
            // The runner is gone: stop at once, leaving held locks to expire, as a killed
            // client would.
            Some(Input::Gone) | None => std::process::exit(EXIT_RUNNER_GONE),
        }
    }
}
