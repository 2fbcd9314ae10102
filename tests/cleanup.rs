//! Nothing is left behind: a panic while a cluster is up removes it (unwinding drops it),
//! `lockbench clean` removes what a killed process could not, and the cluster a test binary's
//! tests share (`common::shared`, never dropped) is removed when that process fails or is
//! killed.

mod common;

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::shared::Shared;
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
    let (tx, rx) = std::sync::mpsc::channel();
    let task = tokio::spawn(async move {
        let opts = ClusterOptions {
            size: Some(1),
            ..Default::default()
        };
        let cluster =
            Cluster::start_with_run_id(lockbench::service::of(System::Redlock), opts, &id)
                .await
                .unwrap();
        assert_eq!(cluster.endpoints().len(), 1);
        tx.send(one_volume(&id)).unwrap();
        panic!("simulated failure while the cluster is up");
    });
    let res = task.await;
    assert!(res.unwrap_err().is_panic());
    common::assert_no_leftovers(&run_id).await;
    common::assert_volumes_gone(&rx.recv().unwrap());
}

/// The one volume of a run's one-node cluster (every server image keeps `/data` on one; its
/// Dockerfile says why), asserted to be there.
fn one_volume(run_id: &str) -> Vec<String> {
    let volumes = common::volumes_of(run_id);
    assert_eq!(volumes.len(), 1, "/data should be one volume: {volumes:?}");
    volumes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_removes_what_a_killed_process_left() {
    let run_id = lockbench::docker::new_run_id();
    let opts = ClusterOptions {
        size: Some(1),
        ..Default::default()
    };
    let cluster =
        Cluster::start_with_run_id(lockbench::service::of(System::Redlock), opts, &run_id)
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
    let volumes = one_volume(&run_id);
    let removed = lockbench_clean(&run_id);
    assert!(!removed["containers"].as_array().unwrap().is_empty());
    common::assert_no_leftovers(&run_id).await;
    common::assert_volumes_gone(&volumes);
}

/// Runs `lockbench clean --run RUN_ID` (only ours: other tests' clusters run alongside),
/// asserts it succeeded, and returns what it says it removed.
fn lockbench_clean(run_id: &str) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["clean", "--run", run_id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A database node keeps its files on a Docker volume (docker/postgres/Dockerfile says why); the
/// volume goes with the cluster, whether the cluster is torn down or `lockbench clean` removes
/// what a killed process left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_nodes_volume_goes_with_its_cluster() {
    let (cluster, run_id, volumes) = postgres_with_its_volume().await;
    cluster.teardown().await.unwrap();
    common::assert_no_leftovers(&run_id).await;
    common::assert_volumes_gone(&volumes);

    let (cluster, run_id, volumes) = postgres_with_its_volume().await;
    std::mem::forget(cluster); // as if the process were SIGKILLed
    let removed = lockbench_clean(&run_id);
    assert!(!removed["containers"].as_array().unwrap().is_empty());
    common::assert_no_leftovers(&run_id).await;
    common::assert_volumes_gone(&volumes);
}

/// A one-node PostgreSQL cluster, its run id and its one volume (asserted to be there).
async fn postgres_with_its_volume() -> (Cluster, String, Vec<String>) {
    let run_id = lockbench::docker::new_run_id();
    let cluster = common::start_with_run_id(System::Postgres, Some(1), &run_id)
        .await
        .unwrap();
    let volumes = one_volume(&run_id);
    (cluster, run_id, volumes)
}

/// The shared cluster of [`shared_cluster_child`], a one-node Redlock (the quickest to start).
static SHARED: Shared<()> = Shared::new(System::Redlock, Some(1), Duration::from_secs(600), none);

fn none(_: Vec<String>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async {})
}

/// Not a test of its own: the process the two tests below start, kill or fail. It prints its
/// shared cluster's run id, then panics if `LOCKBENCH_CHILD_PANICS` is set, else waits to be
/// killed.
#[test]
#[ignore = "started by the shared-cluster tests of this file"]
fn shared_cluster_child() {
    SHARED.run("child", |f| async move {
        println!("RUN_ID {}", f.cluster.run_id());
        if std::env::var_os("LOCKBENCH_CHILD_PANICS").is_some() {
            panic!("simulated failure in a test on the shared cluster");
        }
        tokio::time::sleep(Duration::from_secs(300)).await;
    });
}

/// Starts [`shared_cluster_child`] in a process of its own and returns it with its cluster's
/// run id, once that cluster is up.
fn start_child(panics: bool) -> (Child, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "shared_cluster_child",
        "--exact",
        "--ignored",
        "--nocapture",
    ])
    .stdout(Stdio::piped());
    if panics {
        cmd.env("LOCKBENCH_CHILD_PANICS", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let run_id = lines
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("RUN_ID ").map(str::to_string))
        .expect("the child printed its run id");
    (child, run_id)
}

#[test]
fn a_failed_test_removes_the_shared_cluster_before_its_process_exits() {
    let (mut child, run_id) = start_child(true);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(101), "the child's test must fail");
    // At once: the exit hook waited for the reaper.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(common::assert_no_leftovers(&run_id));
}

#[test]
fn a_killed_test_process_leaves_no_shared_cluster() {
    let (mut child, run_id) = start_child(false);
    assert!(
        !common::containers_of(&run_id).is_empty(),
        "the cluster should be up"
    );
    child.kill().unwrap(); // SIGKILL: no destructor, no exit hook runs
    child.wait().unwrap();
    let t = Instant::now();
    while !common::containers_of(&run_id).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the reaper left run {run_id}'s containers for 60 s after the kill"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(common::assert_no_leftovers(&run_id));
}
