//! Redlock's read-write lock under the herd, through `lockbench run` as a user runs it, while a
//! majority of its five masters restarts empty every few seconds (chaos/redlock-restart-empty.toml
//! on workloads/held-rwlock.toml): the waiters keep the retry discipline of the other recipes,
//! at most 20 requests per client-second inside every fault window. A waiter whose round won
//! only some masters gives its partial grants back and keeps its place in line; that give-back
//! once woke the whole herd on every master, and each woken waiter's own partial give-back woke
//! it again: hundreds of requests per client-second.

mod common;

use std::path::PathBuf;

use common::cli_run::{latest, run, scratch, summary};

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn redlock_rwlock_herd_waiters_back_off_while_a_majority_restarts_empty() {
    let out = scratch("chaos-redlock-rwlock");
    let chaos = repo_file("chaos/redlock-restart-empty.toml");
    let res = run(
        &out,
        &[
            "--systems",
            "redlock",
            "--strategies",
            "herd",
            "--chaos",
            chaos.to_str().unwrap(),
        ],
        &[repo_file("workloads/held-rwlock.toml")],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    // Exit 1 is a verdict (the schedule expects unsafe and may find it); 2 and up is an error.
    assert!(
        matches!(res.status.code(), Some(0 | 1)),
        "exit {:?}: {stderr}",
        res.status.code()
    );
    let run = latest(&out);
    let cells: Vec<String> = std::fs::read_dir(run.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(cells.len(), 1, "one cell: {cells:?}");
    let cell = &cells[0];
    let sum = summary(&run, cell);
    let windows = sum["faults"].as_array().expect("fault windows");
    let mut measured = 0;
    for w in windows {
        assert_eq!(w["kind"], "kill", "{cell}: {w}");
        // A window with no acquisition in it has no rate (null): nothing to hold.
        let Some(rate) = w["requests_per_client_s"].as_f64() else {
            continue;
        };
        measured += 1;
        assert!(
            rate <= 20.0,
            "{cell}: {rate} requests per client-second in the window {w}"
        );
    }
    // The schedule kills every 5-6 s of a 20 s cell: most windows see waiters.
    assert!(
        measured >= 2,
        "{cell}: only {measured} windows had a rate: {windows:?}"
    );
}
