//! Faults on a target, through the commands its file gives (`[commands]`, rendered per node
//! with `{node}`, `{address}` and `{peers}`): the fault primitives as [`Faultable`] verb pairs,
//! so the nemesis plays the chaos schedules on a target as on lockbench's own clusters, and its
//! books run every undo (Ctrl-C included). Each command runs under `sh -c` with the target's
//! deadline; every run is one line of `commands.jsonl` in the run folder (the command, when,
//! its exit, its output), and a command that fails or outlives its deadline fails the fault.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::TargetCluster;
use crate::cluster::{ClusterError, DataOnRestart};
use crate::fault::{ClockAccess, Faultable, Grudge};
use crate::sync::LockUnpoisoned;
use crate::target::{Target, TargetNode, render};

/// The run folder's log of fault commands, one JSON object per line.
pub(super) const LOG_FILE: &str = "commands.jsonl";

/// How much of a command's output a log line keeps.
const OUTPUT_KEPT: usize = 4000;

/// Runs fault commands and appends each to the log.
#[derive(Debug)]
pub(super) struct CommandLog {
    path: PathBuf,
    lock: tokio::sync::Mutex<()>,
}

impl CommandLog {
    pub(super) fn new(path: PathBuf) -> CommandLog {
        CommandLog {
            path,
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Runs `command` (primitive `primitive` on `node`) under `sh -c` by `timeout`: `Err` on a
    /// non-zero exit, a command that could not start, or one past its deadline (killed).
    async fn run(
        &self,
        primitive: &str,
        node: &str,
        command: &str,
        timeout: Duration,
    ) -> Result<(), ClusterError> {
        let started = Instant::now();
        let at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let (exit, stdout, stderr, outcome) = match tokio::time::timeout(timeout, child).await {
            Ok(Ok(out)) => {
                let text = |b: &[u8]| clip(&String::from_utf8_lossy(b));
                let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
                let outcome = if out.status.success() {
                    Ok(())
                } else {
                    Err(format!(
                        "`{command}` exited with {}: {}",
                        out.status,
                        stderr.trim()
                    ))
                };
                (out.status.code(), stdout, stderr, outcome)
            }
            Ok(Err(e)) => (
                None,
                String::new(),
                String::new(),
                Err(format!("`{command}`: {e}")),
            ),
            Err(_) => (
                None,
                String::new(),
                String::new(),
                Err(format!(
                    "`{command}` did not finish within {timeout:?} (killed); raise [commands] \
                     timeout or fix the command"
                )),
            ),
        };
        let line = serde_json::json!({
            "at": at,
            "primitive": primitive,
            "node": node,
            "command": command,
            "exit": exit,
            "seconds": started.elapsed().as_secs_f64(),
            "stdout": stdout,
            "stderr": stderr,
            "error": outcome.as_ref().err(),
        });
        self.append(&line).await;
        outcome.map_err(|error| ClusterError::Fault {
            node: node.to_string(),
            error,
        })
    }

    async fn append(&self, line: &serde_json::Value) {
        use tokio::io::AsyncWriteExt;
        let _one_at_a_time = self.lock.lock().await;
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .await;
        // The log is the record, not the fault: a log that cannot be written is said, and the
        // fault goes on.
        let written = match file {
            // tokio's file hands the bytes to a blocking thread: flush waits until written.
            Ok(mut f) => match f.write_all(format!("{line}\n").as_bytes()).await {
                Ok(()) => f.flush().await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            eprintln!(
                "lockbench: could not log a fault command to {}: {e}",
                self.path.display()
            );
        }
    }
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(OUTPUT_KEPT) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Which template of a primitive's pair.
#[derive(Clone, Copy)]
enum Step {
    Do,
    Undo,
}

impl TargetCluster {
    fn node(&self, name: &str) -> Result<&TargetNode, ClusterError> {
        self.target
            .nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| ClusterError::UnknownNode {
                node: name.to_string(),
                known: self.servers().join(", "),
            })
    }

    /// Runs `primitive`'s command (or its undo) for `node`, with `{peers}` = `peers`.
    async fn command(
        &self,
        primitive: &'static str,
        step: Step,
        node: &str,
        peers: &[&TargetNode],
    ) -> Result<(), ClusterError> {
        let refuse = |why: String| ClusterError::Fault {
            node: node.to_string(),
            error: why,
        };
        if !self.target.faults {
            return Err(refuse(format!(
                "target '{}' says faults = false",
                self.target.name
            )));
        }
        let commands =
            self.target.commands.as_ref().ok_or_else(|| {
                refuse(format!("target '{}' gives no [commands]", self.target.name))
            })?;
        let pair = match primitive {
            "kill" => &commands.kill,
            "pause" => &commands.pause,
            "isolate" => &commands.isolate,
            _ => &None,
        };
        let (template, name) = match (pair, step) {
            (Some((t, _)), Step::Do) => (t, primitive.to_string()),
            (Some((_, t)), Step::Undo) => (t, format!("{primitive} undo")),
            (None, _) => {
                return Err(refuse(format!(
                    "target '{}' gives no command for {primitive}",
                    self.target.name
                )));
            }
        };
        let rendered = render(template, self.node(node)?, peers);
        self.commands
            .run(&name, node, &rendered, commands.timeout)
            .await
    }
}

/// The primitives `target`'s commands cover (`kill`, `pause`, `isolate`), none unless it says
/// `faults = true`.
pub(super) fn covered(target: &Target) -> Vec<&'static str> {
    match (&target.commands, target.faults) {
        (Some(c), true) => c.primitives(),
        _ => Vec::new(),
    }
}

/// A target as faults see it: its `[[nodes]]` by name, each primitive its command pair.
impl Faultable for TargetCluster {
    fn servers(&self) -> Vec<String> {
        self.target.nodes.iter().map(|n| n.name.clone()).collect()
    }

    async fn leader(&self) -> Result<Option<String>, ClusterError> {
        let service = crate::service::of(self.target.system);
        let Some(leads) = service.target_ops().and_then(|o| o.leads) else {
            // No leader (Redlock): faults on "the leader" hit the first node, as on
            // lockbench's own clusters.
            return Ok(self.target.nodes.first().map(|n| n.name.clone()));
        };
        for n in &self.target.nodes {
            let Some(endpoint) = &n.endpoint else {
                continue;
            };
            if let Ok(Ok(true)) = tokio::time::timeout(
                crate::cluster::PROBE_TIMEOUT * 2,
                leads(endpoint, self.login.as_ref()),
            )
            .await
            {
                return Ok(Some(n.name.clone()));
            }
        }
        Ok(None)
    }

    async fn kill(&self, node: &str) -> Result<(), ClusterError> {
        self.command("kill", Step::Do, node, &[]).await
    }

    async fn restart(&self, node: &str, _data: DataOnRestart) -> Result<(), ClusterError> {
        self.command("kill", Step::Undo, node, &[]).await
    }

    async fn pause(&self, node: &str) -> Result<(), ClusterError> {
        self.command("pause", Step::Do, node, &[]).await
    }

    async fn resume(&self, node: &str) -> Result<(), ClusterError> {
        self.command("pause", Step::Undo, node, &[]).await
    }

    async fn partition(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        for (node, cut) in grudge.blocked() {
            if node == crate::cluster::CLIENTS || cut.contains(crate::cluster::CLIENTS) {
                return Err(ClusterError::Fault {
                    node: node.clone(),
                    error: "a target's isolate command cuts a node from its peers, not from \
                            lockbench's clients"
                        .into(),
                });
            }
            let peers: Vec<&TargetNode> =
                cut.iter().map(|p| self.node(p)).collect::<Result<_, _>>()?;
            // Recorded before it runs: a command that fails half-way is healed too.
            self.isolated
                .locked()
                .push((node.clone(), cut.iter().cloned().collect()));
            self.command("isolate", Step::Do, node, &peers).await?;
        }
        Ok(())
    }

    async fn heal(&self) -> Result<(), ClusterError> {
        let isolated = self.isolated.locked().clone();
        for (node, cut) in isolated {
            let peers: Vec<&TargetNode> =
                cut.iter().map(|p| self.node(p)).collect::<Result<_, _>>()?;
            self.command("isolate", Step::Undo, &node, &peers).await?;
            let mut left = self.isolated.locked();
            if let Some(i) = left.iter().position(|(n, c)| *n == node && *c == cut) {
                left.remove(i);
            }
        }
        Ok(())
    }

    fn clock(&self, node: &str) -> Result<ClockAccess, ClusterError> {
        Err(ClusterError::Fault {
            node: node.to_string(),
            error: "a target has no clock command".into(),
        })
    }

    async fn serving(&self, node: &str) -> Result<(), String> {
        // A restarted node serves again once it answers its version probe.
        let Some(endpoint) = self.node(node).map_err(|e| e.to_string())?.endpoint.clone() else {
            return Ok(());
        };
        super::version_probe(self.target.system, &endpoint, self.login.as_ref())
            .await
            .map(|_| ())
    }
}
