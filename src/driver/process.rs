//! One running driver process: spawned in a process group of its own (so a pause stops the
//! whole group, a wrapper script's children included), its stdout read by one task that hands
//! each answer to the request waiting for it, its stderr saved to a file. A crash, a malformed
//! line or an answer nobody awaits breaks the process: every request waiting on it, and every
//! later one, ends as unknown with a message naming the driver and the line.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

use super::protocol::{self, Answer, Reply, Request, RequestOp, Unasked};
use crate::recipe::LostTrigger;

/// How long one write of a request line may take (a line is far smaller than a pipe's buffer:
/// only a driver that stopped reading takes any time).
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a request ended without an answer: always an unknown outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoAnswer(pub String);

/// What the reader task and the requests share.
#[derive(Default)]
struct State {
    /// Requests awaiting their answer, by id.
    pending: HashMap<u64, (String, oneshot::Sender<Answer>)>,
    /// Requests whose deadline passed: a late answer to one is dropped, not a violation.
    abandoned: HashSet<u64>,
    /// Set once the process is unusable, with why (names the driver and the line).
    broken: Option<String>,
    /// The lost signal of each held lock, by (client, key).
    lost: HashMap<(u32, String), LostTrigger>,
    /// Pipe round trips measured (pings and register accesses), µs.
    round_trips_us: Vec<u64>,
}

/// A driver process and its pipes. Dropping it kills the process group.
pub struct DriverProcess {
    /// The library's name, for messages.
    name: String,
    child: Mutex<Option<Child>>,
    pgid: i32,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    state: Arc<Mutex<State>>,
    next_id: std::sync::atomic::AtomicU64,
    /// Acquisitions the driver granted (answered `ok`).
    granted: std::sync::atomic::AtomicU64,
    reader: tokio::task::JoinHandle<()>,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DriverProcess {
    /// Starts `command` (program first) in `dir`, in a new process group, its stderr
    /// appended to `stderr`; `name` names it in every message.
    pub fn spawn(
        name: &str,
        command: &[String],
        dir: &Path,
        stderr: &Path,
    ) -> Result<DriverProcess, NoAnswer> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| NoAnswer(format!("driver {name}: empty command")))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr)
            .map_err(|e| {
                NoAnswer(format!(
                    "driver {name}: cannot open {} for its stderr: {e}",
                    stderr.display()
                ))
            })?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(dir)
            .env("LOCKBENCH_DRIVER_PROTOCOL", protocol::PROTOCOL.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                NoAnswer(format!(
                    "driver {name}: cannot start `{}` in {}: {e}",
                    command.join(" "),
                    dir.display()
                ))
            })?;
        let pgid = child.id().map_or(0, |p| p as i32);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout was piped");
        let state = Arc::new(Mutex::new(State::default()));
        let reader = tokio::spawn(read_answers(name.to_string(), stdout, state.clone()));
        Ok(DriverProcess {
            name: name.to_string(),
            child: Mutex::new(Some(child)),
            pgid,
            stdin: tokio::sync::Mutex::new(stdin),
            state,
            next_id: std::sync::atomic::AtomicU64::new(0),
            granted: std::sync::atomic::AtomicU64::new(0),
            reader,
        })
    }

    /// Counts one acquisition the driver granted.
    pub fn granted_one(&self) {
        self.granted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Acquisitions the driver granted so far.
    pub fn granted(&self) -> u64 {
        self.granted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The process group's id (the driver's pid): what `pause-clients` stops.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Sends `op` and waits for its answer until `deadline`; past it, or when the process is
    /// broken, the outcome is unknown and the error says why.
    pub async fn request(&self, op: RequestOp, deadline: Instant) -> Result<Answer, NoAnswer> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let request = Request { id, op };
        let text = protocol::line(&request);
        let (tx, rx) = oneshot::channel();
        {
            let mut st = lock(&self.state);
            if let Some(why) = &st.broken {
                return Err(NoAnswer(why.clone()));
            }
            st.pending.insert(id, (text.clone(), tx));
        }
        let sent = Instant::now();
        if let Err(why) = self.write(&text).await {
            lock(&self.state).pending.remove(&id);
            return Err(NoAnswer(why));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx).await {
            Ok(Ok(answer)) => {
                if matches!(request.op, RequestOp::Ping) {
                    self.round_trip(sent.elapsed());
                }
                Ok(answer)
            }
            // The reader dropped every sender: the process broke.
            Ok(Err(_)) => Err(NoAnswer(self.broken().unwrap_or_else(|| {
                format!("driver {}: stopped answering `{text}`", self.name)
            }))),
            Err(_) => {
                let mut st = lock(&self.state);
                st.pending.remove(&id);
                st.abandoned.insert(id);
                Err(NoAnswer(format!(
                    "driver {}: no answer to `{text}` within its deadline",
                    self.name
                )))
            }
        }
    }

    /// Sends `hello` and checks the driver speaks [`protocol::PROTOCOL`]; then measures the
    /// pipe with `pings` pings. Returns the library version the driver reports.
    pub async fn hello(
        &self,
        hello: protocol::Hello,
        deadline: Instant,
        pings: u32,
    ) -> Result<Option<String>, NoAnswer> {
        let a = self
            .request(RequestOp::Hello(Box::new(hello)), deadline)
            .await?;
        if a.outcome != protocol::Outcome::Ok {
            return Err(NoAnswer(format!(
                "driver {}: refused hello: {}",
                self.name,
                a.error.unwrap_or_default()
            )));
        }
        if a.protocol != Some(protocol::PROTOCOL) {
            return Err(NoAnswer(format!(
                "driver {}: speaks protocol {:?}, lockbench speaks {}: answer hello with \
                 \"protocol\":{}",
                self.name,
                a.protocol,
                protocol::PROTOCOL,
                protocol::PROTOCOL
            )));
        }
        for _ in 0..pings {
            self.request(RequestOp::Ping, deadline).await?;
        }
        Ok(a.version)
    }

    async fn write(&self, text: &str) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(format!("driver {}: its stdin is closed", self.name));
        };
        let line = format!("{text}\n");
        let wrote = tokio::time::timeout(WRITE_TIMEOUT, async {
            pipe.write_all(line.as_bytes()).await?;
            pipe.flush().await
        })
        .await;
        match wrote {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.break_with(format!(
                "driver {}: writing `{text}` failed: {e}",
                self.name
            ))),
            Err(_) => Err(format!(
                "driver {}: `{text}` could not be written within {} s (it reads no input)",
                self.name,
                WRITE_TIMEOUT.as_secs()
            )),
        }
    }

    /// Records one pipe round trip (a ping's, or a register access's).
    pub fn round_trip(&self, d: Duration) {
        lock(&self.state).round_trips_us.push(d.as_micros() as u64);
    }

    /// Every pipe round trip measured so far, µs.
    pub fn round_trips_us(&self) -> Vec<u64> {
        lock(&self.state).round_trips_us.clone()
    }

    /// Why the process is unusable, if it is.
    pub fn broken(&self) -> Option<String> {
        lock(&self.state).broken.clone()
    }

    fn break_with(&self, why: String) -> String {
        fail_all(&self.state, why)
    }

    /// Watches client `client`'s lock on `key`: a `lease_lost` for it fires `trigger`.
    pub fn watch_lost(&self, client: u32, key: &str, trigger: LostTrigger) {
        lock(&self.state)
            .lost
            .insert((client, key.to_string()), trigger);
    }

    /// Stops watching client `client`'s lock on `key`.
    pub fn unwatch_lost(&self, client: u32, key: &str) {
        lock(&self.state).lost.remove(&(client, key.to_string()));
    }

    /// Closes the driver's stdin (it should exit) and waits up to `grace` for it to, then
    /// kills its group.
    pub async fn finish(&self, grace: Duration) {
        self.stdin.lock().await.take();
        let child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut child) = child
            && tokio::time::timeout(grace, child.wait()).await.is_err()
        {
            self.kill_group();
            let _ = child.wait().await;
        }
        self.kill_group();
    }

    fn kill_group(&self) {
        if self.pgid > 0 {
            // SIGCONT first: a stopped group would not act on the kill until resumed.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
                libc::killpg(self.pgid, libc::SIGCONT);
            }
        }
    }
}

impl Drop for DriverProcess {
    fn drop(&mut self) {
        self.reader.abort();
        let running = self
            .child
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        if running {
            self.kill_group();
        }
    }
}

/// Marks the process broken with `why` (the first reason stays), ending every waiting request.
fn fail_all(state: &Mutex<State>, why: String) -> String {
    let mut st = lock(state);
    let why = st.broken.get_or_insert(why).clone();
    // Dropping the senders wakes every waiter with the broken state to read.
    st.pending.clear();
    why
}

/// The reader task: hands each answer to its request, fires lost signals, and breaks the
/// process on the first line that is not the protocol, an answer nobody awaits, or the end.
async fn read_answers(name: String, stdout: ChildStdout, state: Arc<Mutex<State>>) {
    let mut lines = BufReader::new(stdout).lines();
    let why = loop {
        let line = match lines.next_line().await {
            Ok(Some(l)) => l,
            Ok(None) => break format!("driver {name}: exited (its stdout ended)"),
            Err(e) => break format!("driver {name}: reading its stdout failed: {e}"),
        };
        match protocol::parse(&line) {
            Err(e) => break format!("driver {name}: malformed line `{line}`: {e}"),
            Ok(Reply::Event(Unasked::LeaseLost { client, key, .. })) => {
                if let Some(t) = lock(&state).lost.get(&(client, key)) {
                    t.fire();
                }
            }
            Ok(Reply::Answer(a)) => {
                let mut st = lock(&state);
                match st.pending.remove(&a.id) {
                    Some((_, tx)) => {
                        let _ = tx.send(a);
                    }
                    None if st.abandoned.remove(&a.id) => {}
                    None => {
                        drop(st);
                        break format!(
                            "driver {name}: answered out of order: `{line}` answers no request \
                             awaiting an answer"
                        );
                    }
                }
            }
        }
    };
    fail_all(&state, why);
}
