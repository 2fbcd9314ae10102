//! Shared helpers for integration tests against real clusters.
#![allow(dead_code)]

pub mod broken_scenarios;
pub mod cli_run;
pub mod contention;
pub mod redis_scenarios;
pub mod session_scenarios;
pub mod shared;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::process::Child;
use std::time::{Duration, Instant};

use futures::FutureExt;

use lockbench::{Cluster, ClusterOptions, System};

/// Runs the scenarios of one test file over one cluster, each under its name: a failing
/// scenario is reported by name and the rest still run; [`Scenarios::finish`] then fails the
/// test with every failed name and its message. `LOCKBENCH_SCENARIO=a,b` runs only the
/// scenarios whose names contain `a` or `b`.
pub struct Scenarios {
    /// How long one scenario may take before it counts as failed (a hung wait).
    limit: Duration,
    ran: usize,
    failed: Vec<(String, String)>,
}

impl Scenarios {
    /// Scenarios that each fail after `limit`.
    pub fn new(limit: Duration) -> Scenarios {
        Scenarios {
            limit,
            ran: 0,
            failed: Vec::new(),
        }
    }

    /// Runs scenario `name`, catching its panic (or its overrun) as a failure. Boxed, so that
    /// the test's own future stays small (a dozen scenario futures inline overflow the test
    /// thread's stack).
    pub async fn run(&mut self, name: &str, scenario: Pin<Box<dyn Future<Output = ()> + '_>>) {
        if let Ok(only) = std::env::var("LOCKBENCH_SCENARIO")
            && !only.split(',').any(|o| name.contains(o.trim()))
        {
            return;
        }
        self.ran += 1;
        let t = Instant::now();
        eprintln!("scenario {name} ...");
        let outcome = tokio::time::timeout(self.limit, AssertUnwindSafe(scenario).catch_unwind())
            .await
            .map_err(|_| format!("did not finish within {:?}", self.limit))
            .and_then(|r| r.map_err(|p| panic_message(p.as_ref())));
        let took = t.elapsed().as_secs_f64();
        match outcome {
            Ok(()) => eprintln!("scenario {name} passed ({took:.1} s)"),
            Err(msg) => {
                eprintln!("scenario {name} FAILED ({took:.1} s): {msg}");
                self.failed.push((name.to_string(), msg));
            }
        }
    }

    /// Panics naming every failed scenario, if any failed.
    pub fn finish(self) {
        if self.failed.is_empty() {
            eprintln!("all {} scenarios passed", self.ran);
            return;
        }
        let list: Vec<String> = self
            .failed
            .iter()
            .map(|(n, m)| format!("  {n}: {m}"))
            .collect();
        panic!(
            "{} of {} scenarios FAILED:\n{}",
            self.failed.len(),
            self.ran,
            list.join("\n")
        );
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panicked with a non-text payload".to_string())
}

/// Starts a cluster, failing the test with the error (and the fix it names) if it cannot.
pub async fn start(system: System, size: Option<usize>) -> Cluster {
    let run_id = lockbench::docker::new_run_id();
    start_with_run_id(system, size, &run_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Starts a cluster under `run_id`; `Err` says why it could not (and the fix it names).
pub async fn start_with_run_id(
    system: System,
    size: Option<usize>,
    run_id: &str,
) -> Result<Cluster, String> {
    // Images are built on first use, as for `lockbench up` and `lockbench run`.
    lockbench::image::ensure(&[system.image_kind()], &|l| eprintln!("{l}"))
        .await
        .map_err(|e| format!("could not build the {system} image: {e}"))?;
    let opts = ClusterOptions {
        size,
        ..Default::default()
    };
    let c = Cluster::start_with_run_id(system, opts, run_id)
        .await
        .map_err(|e| format!("could not start {system}: {e}"))?;
    eprintln!(
        "{system} (size {:?}) ready in {:.2} s",
        size,
        c.start_duration().as_secs_f64()
    );
    Ok(c)
}

/// Tears the cluster down and asserts nothing labelled with its run id remains.
pub async fn teardown_and_assert_gone(cluster: Cluster) {
    let run_id = cluster.run_id().to_string();
    cluster.teardown().await.expect("teardown");
    assert_no_leftovers(&run_id).await;
}

/// The ids of the containers, running or not, labelled with this run id (empty: none).
pub fn containers_of(run_id: &str) -> String {
    let out = std::process::Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            &format!("label=lockbench.run={run_id}"),
        ])
        .output()
        .expect("docker ps");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Asserts that no container or network with this run id exists.
pub async fn assert_no_leftovers(run_id: &str) {
    let left = containers_of(run_id);
    assert!(left.is_empty(), "containers left for run {run_id}: {left}");
    let out = std::process::Command::new("docker")
        .args([
            "network",
            "ls",
            "-q",
            "--filter",
            &format!("label=lockbench.run={run_id}"),
        ])
        .output()
        .expect("docker network ls");
    assert!(
        out.stdout.is_empty(),
        "networks left for run {run_id}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Sends `signal` (`INT` as Ctrl-C does, `TERM` as `kill` does) to `child` and waits up to 60 s
/// for it to exit; returns its exit code. `what` names the process in the failure message.
pub fn interrupt_and_wait(child: &mut Child, signal: &str, what: &str) -> Option<i32> {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{what} did not stop after SIG{signal}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Makes `node` answer every TCP packet to its server port with a reset (`on`), or stops it:
/// established connections break at their next request and new ones are refused, so a request
/// sent meanwhile is lost rather than delayed (a paused node, or a DROP rule that TCP
/// retransmits through, would still get it once it is back).
pub async fn reject_port(cluster: &Cluster, node: &str, on: bool) {
    let n = cluster.node(node).expect("node");
    let rule = format!(
        "INPUT -p tcp --dport {} -j REJECT --reject-with tcp-reset",
        n.container_port()
    );
    let script = format!(
        "IPT=iptables; $IPT -w -L -n >/dev/null 2>&1 || IPT=iptables-legacy\n$IPT -w {} {rule}",
        if on { "-I" } else { "-D" }
    );
    n.exec_script(&script).await.unwrap_or_else(|e| {
        panic!(
            "{} the reject rule on {node}: {e}",
            if on { "add" } else { "remove" }
        )
    });
}
