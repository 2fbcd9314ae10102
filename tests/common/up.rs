//! `lockbench up` as a user runs it: started as a process, its cluster read from the JSON it
//! prints, and stopped with SIGTERM, after which no container or network of it may be left.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A cluster from `lockbench up`, removed (SIGTERM, then no container left) on drop.
pub struct Up {
    child: Child,
    /// What `up` printed.
    pub info: Value,
}

impl Up {
    /// `lockbench up ARGS`, waited for until it prints the cluster (at most 180 s).
    pub fn start(args: &[&str]) -> Up {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .arg("up")
            .args(args)
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
        let json = match rx.recv_timeout(Duration::from_secs(180)) {
            Ok(j) => j,
            Err(_) => {
                let _ = child.kill();
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("lockbench up {args:?} printed no cluster within 180 s: {err}");
            }
        };
        let info = serde_json::from_str(&json).expect("up prints JSON");
        Up { child, info }
    }

    /// A list of strings `up` printed, e.g. `endpoints`.
    pub fn strings(&self, field: &str) -> Vec<String> {
        self.info[field]
            .as_array()
            .unwrap_or_else(|| panic!("up's JSON has no {field}: {}", self.info))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    /// `"host:port"` of the endpoints, as a TOML array.
    pub fn toml_list(&self, field: &str) -> String {
        let quoted: Vec<String> = self
            .strings(field)
            .iter()
            .map(|e| format!("\"{e}\""))
            .collect();
        format!("[{}]", quoted.join(", "))
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let run_id = self.info["run_id"].as_str().unwrap_or_default().to_string();
        let code = super::interrupt_and_wait(&mut self.child, "TERM", "lockbench up");
        if !std::thread::panicking() {
            assert_eq!(code, Some(0), "lockbench up did not end cleanly");
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(super::assert_no_leftovers(&run_id));
        }
    }
}
