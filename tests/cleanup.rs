//! Nothing is left behind: a panic while a cluster is up removes it (unwinding drops it), and
//! `lockbench clean` removes what a killed process could not.

mod common;

use lockbench::{Cluster, ClusterOptions, System};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_removes_the_cluster() {
    common::start(System::Redlock, Some(1))
        .await
        .teardown()
        .await
        .unwrap(); // images ready
    let run_id = lockbench::docker::new_run_id();
    let id = run_id.clone();
    let task = tokio::spawn(async move {
        let opts = ClusterOptions {
            size: Some(1),
            ..Default::default()
        };
        let cluster = Cluster::start_with_run_id(System::Redlock, opts, &id)
            .await
            .unwrap();
        assert_eq!(cluster.endpoints().len(), 1);
        panic!("simulated failure while the cluster is up");
    });
    let res = task.await;
    assert!(res.unwrap_err().is_panic());
    common::assert_no_leftovers(&run_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_removes_what_a_killed_process_left() {
    let run_id = lockbench::docker::new_run_id();
    let opts = ClusterOptions {
        size: Some(1),
        ..Default::default()
    };
    let cluster = Cluster::start_with_run_id(System::Redlock, opts, &run_id)
        .await
        .unwrap();
    // As if the process were SIGKILLed: no destructor runs.
    std::mem::forget(cluster);
    let out = std::process::Command::new("docker")
        .args([
            "ps",
            "-q",
            "--filter",
            &format!("label=lockbench.run={run_id}"),
        ])
        .output()
        .unwrap();
    assert!(
        !out.stdout.is_empty(),
        "the forgotten cluster should still be running"
    );
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["clean", "--run", &run_id]) // only ours: other tests' clusters run alongside
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let removed: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(!removed["containers"].as_array().unwrap().is_empty());
    common::assert_no_leftovers(&run_id).await;
}
