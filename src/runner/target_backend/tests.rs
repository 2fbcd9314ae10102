//! The command nemesis with commands that touch no server (`echo`, `false`, `sleep`): what
//! each primitive renders and runs, what the log keeps, and how failures and deadlines end.

use std::collections::BTreeSet;

use super::TargetCluster;
use crate::fault::{Faultable, Grudge};
use crate::target::Target;

fn cluster(commands: &str, dir: &std::path::Path) -> TargetCluster {
    let text = format!(
        "system = \"etcd\"\nendpoints = [\"127.0.0.1:1\"]\nprefix = \"/b\"\nfaults = true\n\
         [[nodes]]\nname = \"n1\"\naddress = \"10.0.0.1\"\n\
         [[nodes]]\nname = \"n2\"\naddress = \"10.0.0.2\"\n\
         [[nodes]]\nname = \"n3\"\naddress = \"10.0.0.3\"\n\
         [commands]\n{commands}"
    );
    let target = Target::from_str(&text, "t/cmd.toml").unwrap();
    TargetCluster {
        server_version: "unknown".into(),
        info: super::connect_info(&target),
        login: None,
        run_root: "/b/run".into(),
        commands: super::faults::CommandLog::new(dir.join(super::faults::LOG_FILE)),
        isolated: Default::default(),
        target,
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lb-cmd-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn log(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join(super::faults::LOG_FILE))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn each_primitive_runs_its_rendered_command_and_the_log_keeps_it() {
    let dir = scratch("render");
    let c = cluster(
        "kill = \"echo kill {node} at {address}\"\nrestart = \"echo start {node}\"\n\
         isolate = \"echo cut {node} from {peers}\"\nheal = \"echo heal {node} from {peers}\"\n",
        &dir,
    );
    c.kill("n2").await.unwrap();
    c.restart("n2", crate::cluster::DataOnRestart::Keep)
        .await
        .unwrap();
    let known: BTreeSet<String> = c.servers().into_iter().collect();
    let grudge =
        Grudge::from_groups(&[vec!["n1".into()], vec!["n2".into(), "n3".into()]], &known).unwrap();
    c.partition(&grudge).await.unwrap();
    c.heal().await.unwrap();
    let lines = log(&dir);
    let said: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["primitive"].as_str().unwrap(),
                l["stdout"].as_str().unwrap().trim(),
            )
        })
        .collect();
    assert_eq!(
        said,
        vec![
            ("kill", "kill n2 at 10.0.0.2"),
            ("kill undo", "start n2"),
            ("isolate", "cut n1 from 10.0.0.2,10.0.0.3"),
            ("isolate", "cut n2 from 10.0.0.1"),
            ("isolate", "cut n3 from 10.0.0.1"),
            ("isolate undo", "heal n1 from 10.0.0.2,10.0.0.3"),
            ("isolate undo", "heal n2 from 10.0.0.1"),
            ("isolate undo", "heal n3 from 10.0.0.1"),
        ]
    );
    assert!(lines.iter().all(|l| l["exit"] == 0 && l["error"].is_null()));
    // Healed: a second heal has nothing left to undo.
    c.heal().await.unwrap();
    assert_eq!(log(&dir).len(), lines.len());
}

#[tokio::test]
async fn a_failing_or_overdue_command_fails_the_fault_and_is_logged() {
    let dir = scratch("fail");
    let c = cluster(
        "kill = \"echo no such node >&2; exit 3\"\nrestart = \"true\"\n\
         pause = \"sleep 8\"\nresume = \"true\"\ntimeout = \"1s\"\n",
        &dir,
    );
    let e = c.kill("n1").await.unwrap_err().to_string();
    assert!(
        e.contains("exited with exit status: 3") && e.contains("no such node"),
        "{e}"
    );
    let started = std::time::Instant::now();
    let e = c.pause("n1").await.unwrap_err().to_string();
    assert!(e.contains("did not finish within 1s"), "{e}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(6),
        "the command was not cut off"
    );
    // A primitive the target gives no command for, and a node it does not name.
    let known: BTreeSet<String> = c.servers().into_iter().collect();
    let grudge = Grudge::from_groups(&[vec!["n1".into()], vec!["n2".into()]], &known).unwrap();
    let e = c.partition(&grudge).await.unwrap_err().to_string();
    assert!(e.contains("gives no command for isolate"), "{e}");
    let e = c.kill("n9").await.unwrap_err().to_string();
    assert!(e.contains("no node named 'n9'"), "{e}");
    let lines = log(&dir);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["exit"], 3);
    assert!(
        lines[1]["exit"].is_null() && lines[1]["error"].as_str().unwrap().contains("within 1s")
    );
}

#[test]
fn a_listed_key_names_its_run_root() {
    use super::run_root_of;
    assert_eq!(
        run_root_of("/b", "/b/0badc0de/cell/k:fence").as_deref(),
        Some("/b/0badc0de")
    );
    assert_eq!(
        run_root_of("/b", "/b/feed/k (on 127.0.0.1:7001)").as_deref(),
        Some("/b/feed")
    );
    assert_eq!(
        run_root_of("/b", "/b/feed").as_deref(),
        Some("/b/feed"),
        "a node that is itself a run root"
    );
    assert_eq!(run_root_of("/b", "/bx/y/z"), None, "another prefix");
}
