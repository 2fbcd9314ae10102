//! Lock clients in `lockbench worker` processes, so that one client process can be paused as a
//! whole (SIGSTOP): its keep-alives, session heartbeats and renewal watchdogs stop with it, which
//! is what a GC-pause fault means. Each worker runs the same client loop as in-process clients
//! (`client::drive`) and streams its events, stamped on the cell's one monotonic clock,
//! to the runner, which records them in the cell's one history (the protocol is in
//! `protocol`).
//!
//! [`Workers`] owns the processes: they are killed and reaped when it is dropped, whatever
//! ended the cell (its end, an error, Ctrl-C, a panic). [`WorkerControl`] is the cheap handle a
//! nemesis pauses and resumes them with.

mod protocol;
mod remote;
mod serve;

pub(crate) use remote::RemoteRegister;
pub use serve::{EXIT_FAILED, EXIT_OK, EXIT_RUNNER_GONE, serve};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use protocol::{AccessResult, FromWorker, Setup, ToWorker, line};

use crate::cluster::ConnectInfo;
use crate::fault::WorkerProcesses;
use crate::history::{Clock, Event, EventKind, HistoryHandle, Op};
use crate::recipe::{RecipeConfig, Strategy};
use crate::resource::{AccessOp, Register};
use crate::workload::{Stop, Workload};

/// How long one write of a control line to a worker may take (a line is far smaller than a
/// pipe's buffer, so only a wedged pipe takes any time at all).
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a worker that said `done` (or was killed) may take to exit before it is killed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of a worker's stderr is kept to show when it fails.
const STDERR_TAIL: usize = 8 * 1024;

/// Where worker processes come from and what their clients connect to.
#[derive(Debug, Clone)]
pub struct WorkerTarget {
    /// The `lockbench` executable, run as `lockbench worker`.
    pub exe: PathBuf,
    /// The cluster the clients connect to.
    pub cluster: ConnectInfo,
}

/// What one cell's worker processes run: everything but which clients.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    /// Every client's recipe settings.
    pub recipe: RecipeConfig,
    /// The cell's workload (its `clients` is the cell's total).
    pub workload: Workload,
    /// The waiting strategy.
    pub strategy: Strategy,
    /// Clients per process (the last process may get fewer).
    pub per_process: u32,
}

/// Worker process failures, each naming the worker and what to look at.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The executable could not be started.
    #[error(
        "cannot start worker process {exe}: {source} (workers are this lockbench binary run as \
         `lockbench worker`: check that it still exists and is executable)"
    )]
    Spawn {
        exe: PathBuf,
        source: std::io::Error,
    },
    /// The worker said it could not set up (a client could not connect, a bad setup).
    #[error("worker {index} (pid {pid}, clients {clients}) failed: {error}")]
    Failed {
        index: usize,
        pid: u32,
        clients: String,
        error: String,
    },
    /// The worker's stdout ended before it said `done`.
    #[error(
        "worker {index} (pid {pid}, clients {clients}) ended without finishing ({status}); its stderr: {stderr}"
    )]
    Ended {
        index: usize,
        pid: u32,
        clients: String,
        status: String,
        stderr: String,
    },
    /// The worker wrote something that is not a worker message where one was due.
    #[error(
        "worker {index} (pid {pid}) broke the protocol: {problem} (is the worker binary the same \
         build as the runner?)"
    )]
    Protocol {
        index: usize,
        pid: u32,
        problem: String,
    },
    /// Not every worker connected its clients in time.
    #[error(
        "{waiting} of {count} workers not ready within {after:?} (still connecting their \
         clients: is the cluster up and reachable?)"
    )]
    NotReady {
        waiting: usize,
        count: usize,
        after: Duration,
    },
    /// The workload could not be written out for the workers.
    #[error("the cell's workload cannot be written for its workers: {0}")]
    Workload(String),
    /// A worker index that does not exist.
    #[error("no worker {index}: there are {count}, numbered from 0")]
    NoSuchWorker { index: usize, count: usize },
    /// The worker has exited; it cannot be signalled.
    #[error("worker {index} (pid {pid}) has exited; it cannot be {verb}")]
    Gone {
        index: usize,
        pid: u32,
        verb: &'static str,
    },
    /// The signal could not be sent.
    #[error("could not send {signal} to worker {index} (pid {pid}): {source}")]
    Signal {
        index: usize,
        pid: u32,
        signal: &'static str,
        source: std::io::Error,
    },
}

/// Where a worker process is, as its [`WorkerControl`] knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerState {
    /// Running (or at least not stopped by us).
    Running,
    /// Stopped with SIGSTOP by [`WorkerControl::pause`].
    Paused,
    /// Exited (or being reaped): its pid may be reused and is never signalled again.
    Exited,
}

#[derive(Debug)]
struct Proc {
    pid: u32,
    clients: Vec<u32>,
    // Held while signalling, and set to Exited before the process is reaped, so a signal can
    // never reach another process that was given the same pid after the reap.
    state: Mutex<WorkerState>,
}

/// The worker processes of a cell as a nemesis sees them: which clients each runs, and a way to
/// pause and resume each as a whole. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WorkerControl(Arc<Vec<Proc>>);

impl WorkerControl {
    /// The number of worker processes.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// True when there is no worker.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Each worker's process id, by worker index.
    pub fn pids(&self) -> Vec<u32> {
        self.0.iter().map(|p| p.pid).collect()
    }
    /// The client ids worker `index` runs (empty for an index out of range).
    pub fn clients(&self, index: usize) -> &[u32] {
        self.0.get(index).map_or(&[], |p| &p.clients)
    }
    /// The worker that runs `client`.
    pub fn worker_of(&self, client: u32) -> Option<usize> {
        self.0.iter().position(|p| p.clients.contains(&client))
    }
    /// Worker `index`'s state.
    pub fn state(&self, index: usize) -> Option<WorkerState> {
        self.0.get(index).map(|p| *lock(&p.state))
    }
    /// Stops worker `index` as a whole (SIGSTOP): every client in it, with its keep-alives,
    /// heartbeats and watchdogs, freezes until [`WorkerControl::resume`]. Pausing a paused
    /// worker is a no-op.
    pub fn pause(&self, index: usize) -> Result<(), WorkerError> {
        self.signal(
            index,
            libc::SIGSTOP,
            "SIGSTOP",
            "paused",
            WorkerState::Paused,
        )
    }
    /// Lets a paused worker `index` go on (SIGCONT); its clients find their leases as the
    /// servers left them. Resuming a running worker is a no-op.
    pub fn resume(&self, index: usize) -> Result<(), WorkerError> {
        self.signal(
            index,
            libc::SIGCONT,
            "SIGCONT",
            "resumed",
            WorkerState::Running,
        )
    }

    fn signal(
        &self,
        index: usize,
        sig: libc::c_int,
        signal: &'static str,
        verb: &'static str,
        after: WorkerState,
    ) -> Result<(), WorkerError> {
        let p = self.0.get(index).ok_or(WorkerError::NoSuchWorker {
            index,
            count: self.0.len(),
        })?;
        let mut state = lock(&p.state);
        if *state == WorkerState::Exited {
            return Err(WorkerError::Gone {
                index,
                pid: p.pid,
                verb,
            });
        }
        // SAFETY: plain kill(2) on a pid we spawned and have not reaped (checked above under
        // the lock that reaping takes first).
        if unsafe { libc::kill(p.pid as libc::pid_t, sig) } != 0 {
            return Err(WorkerError::Signal {
                index,
                pid: p.pid,
                signal,
                source: std::io::Error::last_os_error(),
            });
        }
        *state = after;
        Ok(())
    }

    /// A control over processes the test spawned itself (`(pid, clients)` each), for tests of
    /// what pauses them.
    #[cfg(test)]
    pub(crate) fn from_pids(procs: Vec<(u32, Vec<u32>)>) -> WorkerControl {
        WorkerControl(Arc::new(
            procs
                .into_iter()
                .map(|(pid, clients)| Proc {
                    pid,
                    clients,
                    state: Mutex::new(WorkerState::Running),
                })
                .collect(),
        ))
    }

    fn mark_exited(&self, index: usize) {
        if let Some(p) = self.0.get(index) {
            *lock(&p.state) = WorkerState::Exited;
        }
    }
}

/// The runner's worker control as the fault kinds see it.
impl WorkerProcesses for WorkerControl {
    fn count(&self) -> usize {
        self.len()
    }
    fn running(&self, index: usize) -> bool {
        self.state(index) == Some(WorkerState::Running)
    }
    fn clients(&self, index: usize) -> &[u32] {
        WorkerControl::clients(self, index)
    }
    fn pause(&self, index: usize) -> Result<(), String> {
        WorkerControl::pause(self, index).map_err(|e| e.to_string())
    }
    fn resume(&self, index: usize) -> Result<(), String> {
        match WorkerControl::resume(self, index) {
            // An exited worker has nothing left to resume.
            Ok(()) | Err(WorkerError::Gone { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a reader task saw on a worker's stdout.
enum Read {
    Msg(FromWorker),
    Bad(String),
    Eof,
}

/// One worker's pipes and bookkeeping.
struct Slot {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_task: Option<JoinHandle<()>>,
    reader: JoinHandle<()>,
    ready: bool,
    done: bool,
    eof: bool,
    killed: bool,
    reaped: bool,
}

/// How the workers of a cell ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkersRun {
    /// Clients whose worker ran past every deadline and was killed.
    pub stuck: Vec<u32>,
}

/// What a running cell's worker messages are recorded into and checked against.
struct RunningCell<'a> {
    history: &'a HistoryHandle,
    workload: &'a Workload,
    register: &'a Register,
}

/// The cell's progress as its workers report it.
#[derive(Default)]
struct Progress {
    /// Acquisitions granted so far.
    granted: u64,
    /// Whether the workers were told to stop (the cell's acquisitions reached).
    stop_sent: bool,
    /// Clients arrived per stampede round not yet opened.
    arrivals: BTreeMap<u64, u64>,
}

/// A cell's worker processes, from spawn to reap. Dropping it kills (SIGKILL, which also ends a
/// stopped process) and reaps every worker still there.
pub struct Workers {
    control: WorkerControl,
    slots: Vec<Slot>,
    msgs: mpsc::UnboundedReceiver<(usize, Read)>,
}

impl Workers {
    /// Starts one worker per `per_process` clients of the cell and waits until every worker has
    /// connected its clients.
    pub async fn spawn(target: &WorkerTarget, plan: &WorkerPlan) -> Result<Workers, WorkerError> {
        let total = plan.workload.clients;
        let per = plan.per_process.max(1);
        let (tx, msgs) = mpsc::unbounded_channel();
        let mut procs = Vec::new();
        let mut workers = Workers {
            control: WorkerControl(Arc::new(Vec::new())),
            slots: Vec::new(),
            msgs,
        };
        let workload = toml::to_string(&plan.workload.to_table())
            .map_err(|e| WorkerError::Workload(e.to_string()))?;
        let ids: Vec<u32> = (0..total).collect();
        for (index, chunk) in ids.chunks(per as usize).enumerate() {
            let (slot, pid) = spawn_one(target, index, tx.clone())?;
            // Pushed at once, so an error below still kills what was started.
            workers.slots.push(slot);
            procs.push(Proc {
                pid,
                clients: chunk.to_vec(),
                state: Mutex::new(WorkerState::Running),
            });
            let setup = ToWorker::Setup(Box::new(Setup {
                cluster: target.cluster.clone(),
                recipe: plan.recipe.clone(),
                workload: workload.clone(),
                strategy: plan.strategy,
                clients: chunk.to_vec(),
            }));
            workers.send(index, &setup).await;
        }
        workers.control = WorkerControl(Arc::new(procs));
        let limit = crate::recipe::CONNECT_TIMEOUT * per + Duration::from_secs(15);
        workers.wait_ready(limit).await?;
        Ok(workers)
    }

    /// The handle to pause and resume workers with.
    pub fn control(&self) -> WorkerControl {
        self.control.clone()
    }

    /// Starts the cell in every worker: `clock` is the cell's, whose zero they stamp from.
    pub async fn start(&mut self, clock: Clock) {
        self.broadcast(&ToWorker::Start {
            epoch_ns: clock.epoch_ns(),
        })
        .await;
    }

    /// Records every worker's events in `history` until all have finished, applying their
    /// clients' accesses to `register` (which records them) and answering each, opening
    /// stampede rounds when every client arrived and telling the workers to stop once the
    /// cell's acquisitions are reached. A worker past every deadline (the workload's duration plus a
    /// grace, or, for a count of acquisitions, that long without a word from any worker) is
    /// killed and its clients listed as stuck, as an in-process client task would be aborted.
    pub async fn run(
        &mut self,
        history: &HistoryHandle,
        workload: &Workload,
        register: &Register,
    ) -> Result<WorkersRun, WorkerError> {
        let clock = history.clock();
        let grace = crate::runner::client::drain(workload);
        let quiet = grace + workload.hold.max() + workload.think.max();
        let end = match workload.stop {
            Stop::Duration(d) => Some(clock.instant_at(0) + d + grace),
            Stop::Acquisitions(_) => None,
        };
        let cell = RunningCell {
            history,
            workload,
            register,
        };
        let mut progress = Progress::default();
        let mut heard = Instant::now();
        let mut stuck = Vec::new();
        // Once the stragglers are killed: how long their last lines and EOF may take.
        let mut draining: Option<Instant> = None;
        while self.slots.iter().any(|s| !s.eof) {
            let limit = draining.unwrap_or_else(|| end.unwrap_or(heard + quiet));
            let (index, read) = tokio::select! {
                m = self.msgs.recv() => match m {
                    Some(m) => m,
                    None => break,
                },
                () = tokio::time::sleep_until(limit.into()) => {
                    if draining.is_some() {
                        // Killed and still silent: `Drop` reaps what is left.
                        break;
                    }
                    stuck.extend(self.kill_stragglers());
                    // What they wrote before being killed still arrives; then their EOF.
                    draining = Some(Instant::now() + EXIT_TIMEOUT);
                    continue;
                }
            };
            heard = Instant::now();
            self.on_read(index, read, &cell, &mut progress).await?;
        }
        Ok(WorkersRun { stuck })
    }

    /// Kills every worker that has not ended; returns their clients.
    fn kill_stragglers(&mut self) -> Vec<u32> {
        let mut stuck = Vec::new();
        for i in 0..self.slots.len() {
            if !self.slots[i].eof && !self.slots[i].killed {
                self.kill(i);
                stuck.extend_from_slice(self.control.clients(i));
            }
        }
        stuck
    }

    /// What worker `index` said while the cell runs; `Err` ends the cell (a protocol breach,
    /// a worker that failed or ended early).
    async fn on_read(
        &mut self,
        index: usize,
        read: Read,
        cell: &RunningCell<'_>,
        progress: &mut Progress,
    ) -> Result<(), WorkerError> {
        match read {
            Read::Msg(FromWorker::Event(ev)) => self.on_event(index, *ev, cell, progress).await,
            Read::Msg(FromWorker::Arrive { client, round }) => {
                if !self.control.clients(index).contains(&client) {
                    return Err(self.protocol(
                        index,
                        format!("client {client} arrived, which it does not run"),
                    ));
                }
                let n = progress.arrivals.entry(round).or_default();
                *n += 1;
                if *n == u64::from(cell.workload.clients) {
                    progress.arrivals.remove(&round);
                    self.broadcast(&ToWorker::Open { round }).await;
                }
                Ok(())
            }
            Read::Msg(FromWorker::Access {
                id,
                client,
                key,
                token,
                op,
                value,
            }) => {
                if !self.control.clients(index).contains(&client) {
                    return Err(self.protocol(
                        index,
                        format!("an access by client {client}, which it does not run"),
                    ));
                }
                let value = match (op, value) {
                    (AccessOp::Read | AccessOp::SharedRead, _) => 0,
                    (AccessOp::Write, Some(v)) => v,
                    (AccessOp::Write, None) => {
                        return Err(self.protocol(index, format!("write {id} without a value")));
                    }
                };
                let result = cell.register.access(client, &key, Some(token), op, value);
                let result = AccessResult::from(result);
                self.send(index, &ToWorker::Accessed { id, result }).await;
                Ok(())
            }
            Read::Msg(FromWorker::Done) => {
                self.slots[index].done = true;
                Ok(())
            }
            Read::Msg(FromWorker::Failed { error }) => Err(self.failed(index, error)),
            Read::Msg(other) => Err(self.protocol(index, format!("{other:?} while running"))),
            Read::Bad(problem) => Err(self.protocol(index, problem)),
            Read::Eof => {
                self.slots[index].eof = true;
                let slot = &self.slots[index];
                if !slot.done && !slot.killed {
                    return Err(self.ended(index).await);
                }
                self.reap(index).await;
                Ok(())
            }
        }
    }

    /// An event of worker `index`'s clients, recorded; the workers are told to stop once the
    /// cell's acquisitions are reached.
    async fn on_event(
        &mut self,
        index: usize,
        ev: Event,
        cell: &RunningCell<'_>,
        progress: &mut Progress,
    ) -> Result<(), WorkerError> {
        match ev.client() {
            Some(c) if self.control.clients(index).contains(&c) => {}
            _ => {
                return Err(self.protocol(
                    index,
                    format!("an event of {}, which it does not run", ev.process),
                ));
            }
        }
        if (ev.op, ev.kind) == (Op::Acquire, EventKind::Ok) {
            progress.granted += 1;
        }
        let _ = cell.history.record(ev);
        if let Stop::Acquisitions(n) = cell.workload.stop
            && progress.granted >= n
            && !progress.stop_sent
        {
            progress.stop_sent = true;
            self.broadcast(&ToWorker::Stop).await;
        }
        Ok(())
    }

    /// Waits for every worker's `ready`.
    async fn wait_ready(&mut self, after: Duration) -> Result<(), WorkerError> {
        let deadline = tokio::time::Instant::now() + after;
        while self.slots.iter().any(|s| !s.ready) {
            let (index, read) = match tokio::time::timeout_at(deadline, self.msgs.recv()).await {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(_) => {
                    return Err(WorkerError::NotReady {
                        waiting: self.slots.iter().filter(|s| !s.ready).count(),
                        count: self.slots.len(),
                        after,
                    });
                }
            };
            match read {
                Read::Msg(FromWorker::Ready { .. }) => self.slots[index].ready = true,
                Read::Msg(FromWorker::Failed { error }) => return Err(self.failed(index, error)),
                Read::Msg(other) => {
                    return Err(self.protocol(index, format!("{other:?} before ready")));
                }
                Read::Bad(problem) => return Err(self.protocol(index, problem)),
                Read::Eof => {
                    self.slots[index].eof = true;
                    return Err(self.ended(index).await);
                }
            }
        }
        Ok(())
    }

    fn failed(&self, index: usize, error: String) -> WorkerError {
        let p = &self.control.0[index];
        WorkerError::Failed {
            index,
            pid: p.pid,
            clients: list(&p.clients),
            error,
        }
    }

    fn protocol(&self, index: usize, problem: String) -> WorkerError {
        WorkerError::Protocol {
            index,
            pid: self.control.pids().get(index).copied().unwrap_or(0),
            problem,
        }
    }

    /// The error for a worker whose stdout ended early, with its exit status and stderr.
    async fn ended(&mut self, index: usize) -> WorkerError {
        let status = self.reap(index).await;
        let slot = &mut self.slots[index];
        // The stderr pipe closes when the process is gone; give the reader a moment to finish.
        if let Some(t) = slot.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), t).await;
        }
        let tail = String::from_utf8_lossy(&lock(&slot.stderr))
            .trim()
            .to_string();
        let p = &self.control.0[index];
        WorkerError::Ended {
            index,
            pid: p.pid,
            clients: list(&p.clients),
            status,
            stderr: if tail.is_empty() {
                "(empty)".into()
            } else {
                tail
            },
        }
    }

    /// Waits for worker `index` to exit (killing it if it takes longer than [`EXIT_TIMEOUT`])
    /// and says how it ended.
    async fn reap(&mut self, index: usize) -> String {
        self.control.mark_exited(index);
        let slot = &mut self.slots[index];
        slot.stdin = None;
        if slot.reaped {
            return "reaped".into();
        }
        let status = match tokio::time::timeout(EXIT_TIMEOUT, slot.child.wait()).await {
            Ok(Ok(s)) => s.to_string(),
            Ok(Err(e)) => format!("exit status unknown: {e}"),
            Err(_) => {
                let _ = slot.child.start_kill();
                let _ = tokio::time::timeout(EXIT_TIMEOUT, slot.child.wait()).await;
                format!("did not exit within {EXIT_TIMEOUT:?}; killed")
            }
        };
        slot.reaped = true;
        status
    }

    fn kill(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.killed = true;
        // SIGKILL ends a stopped process too; the reap follows on its stdout's end.
        let _ = slot.child.start_kill();
    }

    async fn send(&mut self, index: usize, msg: &ToWorker) {
        let Ok(bytes) = line(msg) else { return };
        let Some(stdin) = self.slots[index].stdin.as_mut() else {
            return;
        };
        let write = async {
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        };
        // A worker that cannot be written to is dead or wedged; its stdout's end (or the
        // cell's deadline) reports it, with its stderr.
        if !matches!(tokio::time::timeout(WRITE_TIMEOUT, write).await, Ok(Ok(()))) {
            self.slots[index].stdin = None;
        }
    }

    async fn broadcast(&mut self, msg: &ToWorker) {
        for i in 0..self.slots.len() {
            self.send(i, msg).await;
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        for (i, slot) in self.slots.iter_mut().enumerate() {
            slot.reader.abort();
            if let Some(t) = &slot.stderr_task {
                t.abort();
            }
            if slot.reaped {
                continue;
            }
            self.control.mark_exited(i);
            let _ = slot.child.start_kill();
            // SIGKILL takes effect at once; reap here so no zombie outlives the cell.
            while !matches!(slot.child.try_wait(), Ok(Some(_)) | Err(_))
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// Starts one worker process with its pipes and reader tasks.
fn spawn_one(
    target: &WorkerTarget,
    index: usize,
    tx: mpsc::UnboundedSender<(usize, Read)>,
) -> Result<(Slot, u32), WorkerError> {
    let mut cmd = Command::new(&target.exe);
    cmd.arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // A group of its own: Ctrl-C at a terminal reaches the runner only, which then ends
        // the workers itself (and reports the run as interrupted, not as a worker failure).
        .process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe and touches only the child's own settings.
    unsafe {
        // Should the runner die without its destructors (SIGKILL), its workers die with it,
        // stopped ones too (a stopped worker would never read the end of its stdin). The
        // signal follows the spawning thread, a runtime worker that lives as long as the run.
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|source| WorkerError::Spawn {
        exe: target.exe.clone(),
        source,
    })?;
    let pid = child.id().unwrap_or(0);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr_pipe = child.stderr.take();
    let reader = tokio::spawn(async move {
        let Some(stdout) = stdout else {
            let _ = tx.send((index, Read::Eof));
            return;
        };
        let mut lines = BufReader::new(stdout).lines();
        loop {
            let read = match lines.next_line().await {
                Ok(Some(l)) => match serde_json::from_str::<FromWorker>(&l) {
                    Ok(m) => Read::Msg(m),
                    Err(e) => Read::Bad(format!("not a worker message: {e}: {l}")),
                },
                Ok(None) | Err(_) => Read::Eof,
            };
            let eof = matches!(read, Read::Eof);
            if tx.send((index, read)).is_err() || eof {
                return;
            }
        }
    });
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let stderr_task = stderr_pipe.map(|mut pipe| {
        let tail = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut t = lock(&tail);
                t.extend_from_slice(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        })
    });
    Ok((
        Slot {
            child,
            stdin,
            stderr,
            stderr_task,
            reader,
            ready: false,
            done: false,
            eof: false,
            killed: false,
            reaped: false,
        },
        pid,
    ))
}

fn list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::fault::{ClientTarget, Fault, FaultError, PausedClients, pick_worker};
    use crate::nemesis::Faults;
    use crate::recipe::mock::{MockOptions, MockService};

    /// The state letter of `/proc/<pid>/stat` (`T` when stopped).
    fn proc_state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.chars().next().unwrap()
    }

    async fn wait_state(pid: u32, stopped: bool) -> char {
        for _ in 0..100 {
            let s = proc_state(pid);
            if (s == 'T') == stopped {
                return s;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        proc_state(pid)
    }

    #[tokio::test]
    async fn paused_clients_are_resumed_by_heal_all() {
        let mut kids: Vec<std::process::Child> = (0..2)
            .map(|_| {
                std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .unwrap()
            })
            .collect();
        let pids: Vec<u32> = kids.iter().map(|k| k.id()).collect();
        let control = WorkerControl::from_pids(vec![(pids[0], vec![0, 1]), (pids[1], vec![2, 3])]);
        let c = MockService::new(MockOptions::default());
        let mut f = Faults::with_workers(Arc::new(control.clone()));
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let w = pick_worker(ClientTarget::Holder, &[3], &control, &mut rng).unwrap();
        assert_eq!(w, 1);
        f.start(&c, Fault::PauseClient(PausedClients { workers: vec![w] }))
            .await
            .unwrap();
        assert_eq!(wait_state(pids[1], true).await, 'T', "worker 1 stopped");
        assert_ne!(proc_state(pids[0]), 'T', "worker 0 untouched");
        f.heal_all(&c).await.unwrap();
        assert_ne!(wait_state(pids[1], false).await, 'T', "worker 1 resumed");
        f.heal_all(&c).await.unwrap();
        // Without workers the pause is refused, and healing it is harmless.
        let mut bare = Faults::default();
        assert!(matches!(
            bare.start(&c, Fault::PauseClient(PausedClients { workers: vec![0] }))
                .await,
            Err(FaultError::NoWorkers)
        ));
        bare.heal_all(&c).await.unwrap();
        for k in &mut kids {
            k.kill().unwrap();
            k.wait().unwrap();
        }
    }
}
