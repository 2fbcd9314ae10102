//! A run folder for the report tests, made without Docker: the mock lock, planted double
//! grants (so a cell is unsafe with findings) and a kill schedule (so a cell has a fault
//! window); and a small HTML well-formedness check.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use lockbench::System;
use lockbench::nemesis::schedule::Schedule;
use lockbench::plan::{Overrides, Plan};
use lockbench::recipe::Strategy;
use lockbench::recipe::mock::MockOptions;
use lockbench::report::Exporters;
use lockbench::runner::progress::PlainProgress;
use lockbench::runner::{MockBackend, RunFolder, RunOutcome, run_on};
use lockbench::workload::Workload;

const WORKLOAD: &str = r#"
clients = 6
keys = 1
hold = { kind = "uniform", min = "200us", max = "2ms" }
think = { kind = "uniform", min = "0ms", max = "500us" }
duration = "1s"
warmup = "0s"
lease_ttl = "10s"
acquire_timeout = "5s"
strategies = ["herd"]
seed = 5
resource = "unfenced"
expect = "safe"
"#;

const KILL: &str = "seed = 3\n[[faults]]\nkind = \"kill\"\ntarget = \"leader\"\nstart = \"100ms\"\nrestart_after = \"300ms\"\n";

/// An empty scratch folder under the temp dir, unique to this process.
pub fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).expect("scratch folder");
    p
}

/// Two cells on the mock (one calm, one under a leader kill), both with planted overlaps in a
/// workload that expects the lock to hold: both UNSAFE, the second with a fault window.
pub async fn mock_run(out: &Path) -> RunOutcome {
    let wl = Workload::from_str(WORKLOAD, "report-hot").expect("workload");
    let kill = Schedule::from_str(KILL, "chaos/kill.toml").expect("schedule");
    let ov = Overrides {
        schedules: vec![Schedule::none(), kill],
        strategies: Some(vec![Strategy::Herd]),
        ..Overrides::default()
    };
    let plan = Plan::expand("reportrun", &[System::Redis], &[wl], &ov).expect("plan");
    let backend = MockBackend::new(MockOptions {
        overlap_every: Some(7),
        ttl: std::time::Duration::from_secs(10),
        ..MockOptions::default()
    });
    let folder = RunFolder::create(Some(out), "report-hot").expect("folder");
    run_on(
        &backend,
        plan,
        folder,
        &PlainProgress,
        &Exporters::files_only(),
    )
    .await
    .expect("run")
}

/// Elements that have no end tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

/// Checks that every element opened is closed in order (void elements aside), skipping the
/// raw text of `<script>` and `<style>`; returns the element names seen, or where it broke.
pub fn well_formed(html: &str) -> Result<Vec<String>, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = html;
    let mut offset = 0;
    while let Some(at) = rest.find('<') {
        let tag_start = offset + at;
        rest = &rest[at + 1..];
        offset = tag_start + 1;
        let end = rest
            .find('>')
            .ok_or_else(|| format!("unclosed tag at byte {tag_start}"))?;
        let inner = &rest[..end];
        rest = &rest[end + 1..];
        offset += end + 1;
        if inner.starts_with('!') {
            continue;
        }
        if let Some(name) = inner.strip_prefix('/') {
            let name = name.trim().to_ascii_lowercase();
            match stack.pop() {
                Some(open) if open == name => {}
                other => {
                    return Err(format!(
                        "</{name}> at byte {tag_start} closes {other:?} (open: {stack:?})"
                    ));
                }
            }
            continue;
        }
        let name: String = inner
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            return Err(format!("a bare '<' at byte {tag_start}: {inner:?}"));
        }
        // Attribute values must be quoted and free of raw markup.
        if !inner.matches('"').count().is_multiple_of(2) {
            return Err(format!(
                "unbalanced quotes in <{inner}> at byte {tag_start}"
            ));
        }
        seen.push(name.clone());
        if VOID.contains(&name.as_str()) || inner.ends_with('/') {
            continue;
        }
        if name == "script" || name == "style" {
            let close = format!("</{name}>");
            let at = rest
                .find(&close)
                .ok_or_else(|| format!("<{name}> at byte {tag_start} is never closed"))?;
            rest = &rest[at + close.len()..];
            offset += at + close.len();
            continue;
        }
        stack.push(name);
    }
    if stack.is_empty() {
        Ok(seen)
    } else {
        Err(format!("never closed: {stack:?}"))
    }
}

/// The values of every `name="…"` attribute in `html`.
pub fn attribute_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!(" {name}=\"");
    html.match_indices(&key)
        .filter_map(|(i, _)| {
            let v = &html[i + key.len()..];
            v.find('"').map(|end| &v[..end])
        })
        .collect()
}

/// Runs the `lockbench` binary with `args`.
pub fn lockbench(args: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("run lockbench")
}
