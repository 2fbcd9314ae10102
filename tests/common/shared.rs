//! One cluster per test binary, shared by that binary's tests, so that every scenario can be its
//! own `#[test]` (`cargo test --test recipe_etcd crash_herd` runs one) without paying a
//! cluster start per scenario (seconds to tens of seconds each, against CI's 30 minutes).
//!
//! - The cluster starts lazily, in the first test that needs it, on a runtime of its own: every
//!   `#[tokio::test]` gets a runtime that dies with the test, and the cluster's Docker client
//!   and the tests' server clients must outlive it.
//! - Tests take turns (a mutex): a scenario kills the leader or freezes the whole cluster, and
//!   the request-count bands were measured with one scenario at a time. Before each turn the
//!   cluster must be ready again, so a scenario that broke it is named by the next one. A
//!   scenario that panicked (its assertion failed half-way) may have left a node killed or
//!   paused, or a partition in place, that its own last lines would have undone: the next turn
//!   undoes them first ([`repair`]), so one failure is reported once and not by every scenario
//!   after it.
//! - Statics are never dropped, so the containers are removed by a reaper: a child process in
//!   its own process group (Ctrl-C in the terminal does not reach it) that waits for its stdin
//!   to close, which happens when this process ends however it ends (normal exit, a panic,
//!   Ctrl-C, SIGKILL), then runs `lockbench clean --run <this cluster's run id>`. On a normal
//!   exit an `atexit` hook waits for the reaper, so the next test binary starts on a clean host.

use std::future::Future;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::{LazyLock, Mutex, Once, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt;
use lockbench::cluster::{DataOnRestart, NodeState};
use lockbench::{Cluster, System};

/// The extra state a test binary builds once over the shared cluster (raw server clients).
pub type Connect<T> = fn(Vec<String>) -> Pin<Box<dyn Future<Output = T> + Send>>;

/// For a test binary that needs nothing beyond the cluster and its endpoints.
pub fn no_state(_endpoints: Vec<String>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async {})
}

/// A cluster started on first use and shared by every test of one test binary; see the
/// module doc. Declared as a `static` in the test file.
pub struct Shared<T: 'static> {
    system: System,
    size: Option<usize>,
    /// How long one scenario may take before it counts as failed (a hung wait).
    limit: Duration,
    connect: Connect<T>,
    fixture: OnceLock<Result<Fixture<T>, String>>,
    turn: Mutex<()>,
    /// Set once the cluster did not become ready again within [`READY_WAIT`] (after the repair
    /// of a failed scenario, or not): why. Every later scenario then fails at once, naming it,
    /// instead of waiting as long again for a cluster that one wait could not bring back (CI
    /// once spent five more minutes so on `recipe_postgres`); scripts/test runs a binary that
    /// failed beside others again alone, on a cluster of its own.
    broken: OnceLock<String>,
}

/// How long a scenario waits for the shared cluster to be ready before it starts.
const READY_WAIT: Duration = Duration::from_secs(60);

/// How many of each node's last log lines a failed scenario, or a broken cluster, shows.
const LOG_TAIL: usize = 30;

/// What a scenario gets: the cluster, its client endpoints, and the binary's own state.
pub struct Fixture<T> {
    pub cluster: Cluster,
    pub endpoints: Vec<String>,
    pub state: T,
}

/// The runtime every shared cluster and its scenarios run on (4 workers, as the tests had).
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("the shared test runtime")
});

/// The reapers of this process's shared clusters (one per `Shared` static), waited for at exit.
/// Held here because dropping a reaper's stdin is what starts its removal.
static REAPERS: Mutex<Vec<Child>> = Mutex::new(Vec::new());

/// Registers [`wait_for_reapers`] once per process.
static EXIT_HOOK: Once = Once::new();

impl<T: Send + Sync + 'static> Shared<T> {
    /// A `size`-node `system` cluster with `connect`'s state, each scenario failing after
    /// `limit`.
    pub const fn new(
        system: System,
        size: Option<usize>,
        limit: Duration,
        connect: Connect<T>,
    ) -> Shared<T> {
        Shared {
            system,
            size,
            limit,
            connect,
            fixture: OnceLock::new(),
            turn: Mutex::new(()),
            broken: OnceLock::new(),
        }
    }

    /// Runs scenario `name` on the shared cluster (starting it if this is the first), after
    /// the cluster is ready again; panics, failing the calling test, if the scenario panics,
    /// overruns the limit, or the cluster cannot start or is broken.
    pub fn run<F, Fut>(&'static self, name: &str, scenario: F)
    where
        F: FnOnce(&'static Fixture<T>) -> Fut,
        Fut: Future<Output = ()>,
    {
        // A failed scenario poisons the mutex; the next one still gets its turn, after the
        // repair of what the failed one may have left.
        let (_turn, after_a_failure) = match self.turn.lock() {
            Ok(turn) => (turn, false),
            Err(poisoned) => (poisoned.into_inner(), true),
        };
        self.turn.clear_poison();
        if let Some(why) = self.broken.get() {
            panic!(
                "scenario {name} did not run: the shared {} cluster was found broken before an \
                 earlier scenario ({why}); run this one alone",
                self.system
            );
        }
        let fixture = match self.fixture.get_or_init(|| RUNTIME.block_on(self.start())) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        };
        let system = self.system;
        RUNTIME.block_on(async {
            if after_a_failure {
                repair(&fixture.cluster).await;
            }
            if let Err(e) = fixture.cluster.wait_ready(READY_WAIT).await {
                let logs = log_tails(&fixture.cluster).await;
                let _ = self.broken.set(format!("before scenario {name}: {e}"));
                panic!(
                    "the shared {system} cluster is not ready before scenario {name} (an \
                     earlier scenario may have left it broken; run this one alone): {e}\n{logs}"
                );
            }
            let t = Instant::now();
            eprintln!("scenario {name} ...");
            // Boxed: some scenario futures are large enough to overflow a test thread's stack.
            // A scenario that fails shows the nodes' last log lines first: the containers are
            // gone when the binary ends, and a failure seen only beside other binaries (a node
            // that did not come back) is read from them or not at all.
            let run = AssertUnwindSafe(Box::pin(scenario(fixture))).catch_unwind();
            match tokio::time::timeout(self.limit, run).await {
                Ok(Ok(())) => {}
                Ok(Err(panic)) => {
                    eprintln!("scenario {name} failed; its cluster's nodes say:");
                    eprint!("{}", log_tails(&fixture.cluster).await);
                    std::panic::resume_unwind(panic);
                }
                Err(_) => {
                    let logs = log_tails(&fixture.cluster).await;
                    panic!(
                        "scenario {name} did not finish within {:?}\n{logs}",
                        self.limit
                    );
                }
            }
            eprintln!(
                "scenario {name} passed ({:.1} s)",
                t.elapsed().as_secs_f64()
            );
        });
    }

    /// The reaper first (so that even a start interrupted by Ctrl-C leaves nothing), then
    /// the cluster and the binary's state.
    async fn start(&self) -> Result<Fixture<T>, String> {
        let run_id = lockbench::docker::new_run_id();
        spawn_reaper(&run_id)?;
        eprintln!(
            "the shared {} cluster of this test binary is run {run_id}, removed when it exits",
            self.system
        );
        let cluster = super::start_with_run_id(self.system, self.size, &run_id).await?;
        let endpoints = cluster.endpoints();
        let state = (self.connect)(endpoints.clone()).await;
        Ok(Fixture {
            cluster,
            endpoints,
            state,
        })
    }
}

/// The last [`LOG_TAIL`] lines of every node's log, under a heading per node: what a failed
/// scenario or a broken cluster shows of why (the containers are gone when the binary ends).
pub async fn log_tails(cluster: &Cluster) -> String {
    let mut out = String::new();
    for n in cluster.nodes() {
        let name = n.name();
        match cluster.logs(name).await {
            Ok(log) => {
                let lines: Vec<&str> = log.lines().collect();
                let tail = &lines[lines.len().saturating_sub(LOG_TAIL)..];
                out.push_str(&format!("--- the last lines of {name}'s log:\n"));
                for line in tail {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            Err(e) => out.push_str(&format!("--- {name}'s log cannot be read: {e}\n")),
        }
    }
    out
}

/// Undoes what a scenario that panicked half-way may have left: every partition healed, every
/// paused node thawed, every killed node started again with its data. What fails here is
/// printed; `wait_ready` then says whether the cluster is whole.
async fn repair(cluster: &Cluster) {
    eprintln!("an earlier scenario failed: healing partitions, thawing and restarting nodes");
    if let Err(e) = cluster.heal().await {
        eprintln!("repair: healing the partitions failed: {e}");
    }
    for n in cluster.nodes() {
        let undone = match n.state() {
            NodeState::Running => continue,
            NodeState::Paused => cluster.resume(n.name()).await,
            NodeState::Killed => cluster.restart(n.name(), DataOnRestart::Keep).await,
        };
        if let Err(e) = undone {
            eprintln!(
                "repair: {} ({:?}) could not be brought back: {e}",
                n.name(),
                n.state()
            );
        }
    }
    // What scenarios change besides the nodes' states: a port's reject rule
    // (`super::reject_port`) and Sentinel's down-after, raised to a minute while a Redis master
    // is frozen or cut off.
    for n in cluster.servers() {
        if let Err(e) = super::clear_reject(n).await {
            eprintln!("repair: the reject rules of {} stay: {e}", n.name());
        }
    }
    if !cluster.sentinel_endpoints().is_empty() {
        super::redis_scenarios::set_down_after(cluster, super::redis_scenarios::SENTINEL_DOWN_MS)
            .await;
    }
}

/// Starts the reaper of `run_id` and registers the exit hook that waits for it.
fn spawn_reaper(run_id: &str) -> Result<(), String> {
    assert!(!run_id.is_empty(), "an empty run id would clean every run");
    // `cat` returns when the write end of its stdin closes: only this process holds it (std
    // opens pipes close-on-exec, so no child process inherits it).
    let script = r#"trap '' INT HUP; cat >/dev/null; exec "$0" clean --run "$1" >/dev/null"#;
    let child = Command::new("sh")
        .args(["-c", script, env!("CARGO_BIN_EXE_lockbench"), run_id])
        .stdin(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the container reaper (sh): {e}"))?;
    REAPERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(child);
    let mut registered = true;
    EXIT_HOOK.call_once(|| {
        // SAFETY: registering a plain `extern "C"` function with no captured state.
        registered = unsafe { libc::atexit(wait_for_reapers) } == 0;
    });
    if !registered {
        return Err("cannot register the exit hook that removes the shared cluster".into());
    }
    Ok(())
}

/// At a normal exit (all tests done, passed or failed): close every reaper's stdin and wait
/// for them to remove their clusters, so the containers are gone when the binary returns.
extern "C" fn wait_for_reapers() {
    let reapers = std::mem::take(&mut *REAPERS.lock().unwrap_or_else(PoisonError::into_inner));
    let mut reapers: Vec<Child> = reapers
        .into_iter()
        .map(|mut child| {
            drop(child.stdin.take());
            child
        })
        .collect();
    let _ = std::io::stderr().flush();
    for child in &mut reapers {
        match child.wait() {
            Ok(s) if s.success() => {}
            other => eprintln!(
                "removing a shared test cluster failed ({other:?}); `docker ps --filter \
                 label=lockbench.run` lists what is left"
            ),
        }
    }
}
