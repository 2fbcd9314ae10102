//! `lockbench up` end to end: it prints the cluster as JSON, and SIGTERM (what `kill` and CI
//! runners send; Ctrl-C's SIGINT is covered by the run test) removes every
//! container and network it started.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn up_prints_endpoints_and_sigterm_removes_everything() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["up", "redlock", "--size", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lockbench up");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut json = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            json.push_str(&line);
            json.push('\n');
            if line == "}" {
                let _ = tx.send(json.clone());
            }
        }
    });
    let json = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(j) => j,
        Err(_) => {
            let _ = child.kill();
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("lockbench up printed no cluster within 120 s: {err}");
        }
    };
    let info: serde_json::Value = serde_json::from_str(&json).expect("up prints JSON");
    let run_id = info["run_id"].as_str().expect("run_id").to_string();
    let endpoint = info["endpoints"][0].as_str().expect("an endpoint");
    assert!(endpoint.starts_with("127.0.0.1:"), "{endpoint}");
    assert_eq!(info["nodes"][0]["state"], "running");

    let code = common::interrupt_and_wait(&mut child, "TERM", "lockbench up");
    assert_eq!(code, Some(0));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(common::assert_no_leftovers(&run_id));
}
