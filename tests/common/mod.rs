//! Shared helpers for integration tests against real clusters.
#![allow(dead_code)]

pub mod broken_scenarios;
pub mod cli_run;
pub mod contention;
pub mod redis_scenarios;
pub mod session_scenarios;
pub mod shared;
pub mod up;

use std::process::Child;
use std::time::{Duration, Instant};

use lockbench::{Cluster, ClusterOptions, System};

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
    let opts = ClusterOptions {
        size,
        ..Default::default()
    };
    start_with_options(system, opts, run_id).await
}

/// Starts a cluster with `opts` under `run_id`, building its image first where it is missing
/// or stale; `Err` says why it could not (and the fix it names).
pub async fn start_with_options(
    system: System,
    opts: ClusterOptions,
    run_id: &str,
) -> Result<Cluster, String> {
    // Images are built on first use, as for `lockbench up` and `lockbench run`.
    lockbench::image::ensure(&[system.default_version()], &|l| eprintln!("{l}"))
        .await
        .map_err(|e| format!("could not build the {system} image: {e}"))?;
    let size = opts.size;
    let c = Cluster::start_with_run_id(lockbench::service::of(system), opts, run_id)
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

/// Runs `docker ARGS`, asserts it succeeded (a failed listing must not read as "nothing
/// there"), and returns its standard output, trimmed.
fn docker_stdout(args: &[&str]) -> String {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("run docker");
    assert!(
        out.status.success(),
        "docker {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The ids of the containers, running or not, labelled with this run id (empty: none).
pub fn containers_of(run_id: &str) -> String {
    docker_stdout(&[
        "ps",
        "-aq",
        "--filter",
        &format!("label=lockbench.run={run_id}"),
    ])
}

/// The names of the Docker volumes mounted in this run's containers (each server image's `/data`).
pub fn volumes_of(run_id: &str) -> Vec<String> {
    let ids = containers_of(run_id);
    if ids.is_empty() {
        return Vec::new();
    }
    let format = r#"{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}"#;
    let args: Vec<&str> = ["inspect", "-f", format]
        .into_iter()
        .chain(ids.split_whitespace())
        .collect();
    docker_stdout(&args)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Asserts that none of these Docker volumes exists any more.
pub fn assert_volumes_gone(volumes: &[String]) {
    let left: Vec<&String> = volumes
        .iter()
        .filter(|v| {
            std::process::Command::new("docker")
                .args(["volume", "inspect", v.as_str()])
                .output()
                .expect("docker volume inspect")
                .status
                .success()
        })
        .collect();
    assert!(left.is_empty(), "volumes left behind: {left:?}");
}

/// Asserts that no container or network with this run id exists.
pub async fn assert_no_leftovers(run_id: &str) {
    let left = containers_of(run_id);
    assert!(left.is_empty(), "containers left for run {run_id}: {left}");
    let filter = format!("label=lockbench.run={run_id}");
    let left = docker_stdout(&["network", "ls", "-q", "--filter", &filter]);
    assert!(left.is_empty(), "networks left for run {run_id}: {left}");
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
    let script = format!(
        "{IPTABLES}\n$IPT -w {} {}",
        if on { "-I" } else { "-D" },
        reject_rule(n)
    );
    n.exec_script(&script).await.unwrap_or_else(|e| {
        panic!(
            "{} the reject rule on {node}: {e}",
            if on { "add" } else { "remove" }
        )
    });
}

/// Removes every rule [`reject_port`] added on `node` (none is fine): after a scenario that
/// failed while one was in force.
pub async fn clear_reject(node: &lockbench::cluster::Node) -> Result<(), String> {
    let script = format!(
        "{IPTABLES}\nwhile $IPT -w -D {} 2>/dev/null; do :; done",
        reject_rule(node)
    );
    node.exec_script(&script)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Picks the iptables the container's kernel takes, as `$IPT`.
const IPTABLES: &str = "IPT=iptables; $IPT -w -L -n >/dev/null 2>&1 || IPT=iptables-legacy";

/// The rule that resets every TCP packet to `node`'s server port.
fn reject_rule(node: &lockbench::cluster::Node) -> String {
    format!(
        "INPUT -p tcp --dport {} -j REJECT --reject-with tcp-reset",
        node.container_port()
    )
}
