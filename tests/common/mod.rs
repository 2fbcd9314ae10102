//! Shared helpers for integration tests against real clusters.
#![allow(dead_code)]

pub mod contention;
pub mod redis_scenarios;
pub mod session_scenarios;

use std::process::Child;
use std::time::{Duration, Instant};

use lockbench::{Cluster, ClusterOptions, System};

/// Starts a cluster, failing the test with the error (and the fix it names) if it cannot.
pub async fn start(system: System, size: Option<usize>) -> Cluster {
    // Images are built on first use, as for `lockbench up` and `lockbench run`.
    lockbench::image::ensure(&[system.image_kind()], &|l| eprintln!("{l}"))
        .await
        .unwrap_or_else(|e| panic!("could not build the {system} image: {e}"));
    match Cluster::start(
        system,
        ClusterOptions {
            size,
            ..Default::default()
        },
    )
    .await
    {
        Ok(c) => {
            eprintln!(
                "{system} (size {:?}) ready in {:.2} s",
                size,
                c.start_duration().as_secs_f64()
            );
            c
        }
        Err(e) => panic!("could not start {system}: {e}"),
    }
}

/// Tears the cluster down and asserts nothing labelled with its run id remains.
pub async fn teardown_and_assert_gone(cluster: Cluster) {
    let run_id = cluster.run_id().to_string();
    cluster.teardown().await.expect("teardown");
    assert_no_leftovers(&run_id).await;
}

/// Asserts that no container or network with this run id exists.
pub async fn assert_no_leftovers(run_id: &str) {
    let out = std::process::Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            &format!("label=lockbench.run={run_id}"),
        ])
        .output()
        .expect("docker ps");
    assert!(
        out.stdout.is_empty(),
        "containers left for run {run_id}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
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
