//! The verbs that play a plan on real clusters: `run` and `capacity`.

use std::path::Path;

use super::results::verdicts;
use super::{CapacityArgs, Exit, RunArgs};
use crate::docker;
use crate::plan::{Overrides, Plan};
use crate::runner::{Backend, DockerBackend, RunOutcome, TargetBackend};
use crate::system::SystemAt;
use crate::workload::Workload;

/// `lockbench capacity`'s built-in workload (the file in workloads/, embedded so the binary
/// runs anywhere).
const DEFAULT_WORKLOAD: &str = include_str!("../../workloads/hot-lock.toml");

/// `lockbench run`'s built-in workload, swept over [`DEFAULT_CLIENTS`].
const DEFAULT_RUN_WORKLOAD: &str = include_str!("../../workloads/client-sweep.toml");

/// The client counts of the default comparison (no `--workload`, no `--clients`): enough
/// points that wake-ups, handoff and throughput against clients are curves, few enough that
/// the default run stays within 5 minutes.
pub const DEFAULT_CLIENTS: [u32; 3] = [2, 8, 32];

/// The workloads `run` plays and the client counts it sweeps (`None`: each workload's own):
/// the files named, or the built-in sweep when none is.
fn run_workloads(args: &RunArgs) -> anyhow::Result<(Vec<Workload>, Option<Vec<u32>>)> {
    if !args.workloads.is_empty() {
        let files = args
            .workloads
            .iter()
            .map(|p| Workload::from_file(p))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok((files, args.clients.clone()));
    }
    let sweep = Workload::from_str(DEFAULT_RUN_WORKLOAD, "client-sweep")?;
    let clients = args.clients.clone().or(Some(DEFAULT_CLIENTS.to_vec()));
    Ok((vec![sweep], clients))
}

/// `lockbench run`: the comparison; exit 1 when a cell is not as its workload expects.
pub async fn run(args: RunArgs) -> anyhow::Result<Exit> {
    // Everything is validated before any container starts.
    let (workloads, clients) = run_workloads(&args)?;
    let schedules = args
        .chaos
        .iter()
        .map(|p| crate::nemesis::schedule::Schedule::from_file(p))
        .collect::<Result<Vec<_>, _>>()?;
    let clients_as = args.clients_override().map_err(anyhow::Error::msg)?;
    let ov = Overrides {
        schedules,
        clients_as,
        strategies: args.strategies,
        clients,
        duration: args.duration,
        seed: args.seed,
        client_latency: args.client_latency,
        peer_latency: args.peer_latency,
        libraries: libraries(&args.clients_from)?,
    };
    let run_id = docker::new_run_id();
    let name = workloads
        .iter()
        .map(|w| w.name.as_str())
        .collect::<Vec<_>>()
        .join("+");
    if !args.targets.is_empty() {
        let backend = targets_backend(&args.targets, &ov)?;
        // Before the run's folder is made: a refused prefix or a missing password leaves none.
        backend.check().await?;
        let plan = Plan::expand(&run_id, &backend.systems(), &workloads, &ov)?
            .repeated(args.repeat)
            .with_floor_samples(args.floor_samples as usize);
        for s in &plan.skipped {
            eprintln!("lockbench: skipped {s}");
        }
        let heading = format!("{} cells on your own clusters", plan.cells.len());
        let Some(outcome) = play(&backend, plan, args.out.as_deref(), &name, &heading, "").await?
        else {
            return Ok(Exit::Interrupted);
        };
        return Ok(with_failures(
            verdicts(&outcome.summaries, args.strict),
            &outcome.failed,
        ));
    }
    let systems: Vec<SystemAt> = if args.all_systems {
        crate::system::ALL_SYSTEMS
            .into_iter()
            .map(SystemAt::default_of)
            .collect()
    } else {
        let mut once: Vec<SystemAt> = Vec::new();
        for at in &args.systems {
            if !once
                .iter()
                .any(|o| o.system == at.system && o.version == at.version)
            {
                once.push(*at);
            }
        }
        once
    };
    refuse_override_beside_version(&systems)?;
    let plan = Plan::expand(&run_id, &systems, &workloads, &ov)?
        .repeated(args.repeat)
        .with_floor_samples(args.floor_samples as usize);
    for s in &plan.skipped {
        eprintln!("lockbench: skipped {s}");
    }
    docker::connect().await?;
    let heading = format!("{} cells", plan.cells.len());
    let backend = DockerBackend {
        server_defaults: args.server_defaults,
        ..DockerBackend::default()
    };
    let Some(outcome) = play(&backend, plan, args.out.as_deref(), &name, &heading, "").await?
    else {
        return Ok(Exit::Interrupted);
    };
    Ok(with_failures(
        verdicts(&outcome.summaries, args.strict),
        &outcome.failed,
    ))
}

/// The `--clients-from` drivers' libraries, each manifest read (and refused with the file and
/// field at fault) before anything starts.
fn libraries(named: &[String]) -> anyhow::Result<Vec<crate::plan::ClientLibrary>> {
    named
        .iter()
        .map(|n| {
            let path =
                crate::driver::check::find(n).map_err(|e| anyhow::anyhow!("--clients-from {e}"))?;
            let m = crate::driver::Manifest::load(&path)?;
            Ok(crate::plan::ClientLibrary {
                name: m.library,
                manifest: m.path,
                systems: m.systems,
                tokens: m.tokens,
            })
        })
        .collect()
}

/// Refuses an image override (`--etcd-image`, `LOCKBENCH_ETCD_IMAGE`) beside a version named
/// for the same image (`etcd@3.4`): the override replaces the default version's image, so the
/// cell would say one version and run another.
pub(crate) fn refuse_override_beside_version(systems: &[SystemAt]) -> anyhow::Result<()> {
    for at in systems.iter().filter(|a| a.named) {
        let kind = at.system.image_kind();
        if let Some(image) = crate::image::override_of(kind) {
            anyhow::bail!(
                "--systems {at} names a version, but {} (or --{}-image) is set to {image}, which                  replaces the default version's image: name no version to run {image}, or drop                  the override to run {at}",
                crate::image::override_var(kind),
                kind.name()
            );
        }
    }
    Ok(())
}

/// The run's exit once its cells are judged: cells that could not run make it a tool error
/// (2), each said with why, whatever the verdicts of the others.
fn with_failures(exit: Exit, failed: &[crate::results::FailedCell]) -> Exit {
    if failed.is_empty() {
        return exit;
    }
    eprintln!("lockbench: {} cell(s) could not run:", failed.len());
    for f in failed {
        eprintln!("lockbench:   {}: {}", f.id, f.reason);
    }
    Exit::ToolError
}

/// `lockbench capacity`: the sweep run as `lockbench run` runs a plan, then the capacity
/// report, its figure and the reports written into the run folder, and a summary printed.
pub async fn capacity(args: CapacityArgs) -> anyhow::Result<Exit> {
    use crate::capacity::sweep::{self, Sweep};
    // Everything is validated before any container starts.
    let workload = match &args.workload {
        Some(p) => Workload::from_file(p)?,
        None => Workload::from_str(DEFAULT_WORKLOAD, "hot-lock")?,
    };
    let spec = Sweep {
        system: args.system,
        strategy: args.strategy,
        clients: args.clients,
        duration: args.duration,
        seed: args.seed,
    };
    let run_id = docker::new_run_id();
    let plan = spec.plan(&run_id, &workload)?.repeated(args.repeat);
    docker::connect().await?;
    let name = format!("capacity-{}", workload.name);
    let heading = format!(
        "capacity sweep of {} {}, {} cells on one cluster",
        spec.system,
        spec.strategy,
        plan.cells.len()
    );
    let note = "; no capacity report";
    let backend = DockerBackend::default();
    let Some(outcome) = play(&backend, plan, args.out.as_deref(), &name, &heading, note).await?
    else {
        return Ok(Exit::Interrupted);
    };
    let capacity = sweep::finish(
        &outcome.folder,
        &outcome.summaries,
        args.slo,
        &crate::report::Exporters::reports(),
    )?;
    for line in sweep::summary_lines(&capacity) {
        println!("{line}");
    }
    println!("{}", crate::capacity::file::path(&outcome.folder).display());
    Ok(with_failures(
        verdicts(&outcome.summaries, false),
        &outcome.failed,
    ))
}

/// Plays `plan` into a new run folder `name` under `out` with the progress on stderr, after
/// saying `heading` and where the results go; `None` (said, with `interrupted_note`) when
/// Ctrl-C or SIGTERM ended it.
async fn play<B: Backend>(
    backend: &B,
    plan: Plan,
    out: Option<&Path>,
    name: &str,
    heading: &str,
    interrupted_note: &str,
) -> anyhow::Result<Option<RunOutcome>> {
    let folder = crate::runner::RunFolder::create(out, name)?;
    eprintln!(
        "lockbench: {heading}; results in {}",
        folder.path().display()
    );
    let progress = crate::runner::progress::for_stderr(plan.cells.len());
    let outcome = crate::runner::run_on(
        backend,
        plan,
        folder,
        progress.as_ref(),
        &crate::report::Exporters::standard(),
    )
    .await?;
    if outcome.interrupted {
        eprintln!(
            "lockbench: interrupted; not run: {}{interrupted_note}",
            outcome.not_run.join(", ")
        );
        return Ok(None);
    }
    Ok(Some(outcome))
}

/// The backend of `run --target`: the target files read and checked against the run's
/// schedules.
fn targets_backend(files: &[std::path::PathBuf], ov: &Overrides) -> anyhow::Result<TargetBackend> {
    let targets = files
        .iter()
        .map(|p| crate::target::Target::from_file(p))
        .collect::<Result<Vec<_>, _>>()?;
    TargetBackend::new(targets, &ov.schedules)
}

/// `lockbench clean --target FILE [--run ID]`: removes what runs left under the target's prefix
/// (only `<prefix>/<ID>` with `--run`), and prints how many keys went.
pub async fn clean_target(file: &std::path::Path, run_id: Option<&str>) -> anyhow::Result<Exit> {
    let target = crate::target::Target::from_file(file)?;
    let removed = crate::runner::target_backend::clean(&target, run_id).await?;
    println!(
        "{}",
        serde_json::json!({ "target": target.name, "removed": removed })
    );
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn run_args(args: &[&str]) -> RunArgs {
        let argv = ["lockbench", "run"].iter().chain(args);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Run(a) => a,
            other => panic!("not a run: {other:?}"),
        }
    }

    #[test]
    fn the_default_run_sweeps_the_client_count_and_a_named_workload_keeps_its_own() {
        let (w, clients) = run_workloads(&run_args(&[])).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].name, "client-sweep");
        assert_eq!(clients, Some(vec![2, 8, 32]));
        assert_eq!(
            w[0].stop,
            crate::workload::Stop::Duration(std::time::Duration::from_secs(8))
        );
        // --clients replaces the sweep; --duration leaves it.
        let (_, clients) = run_workloads(&run_args(&["--clients", "4"])).unwrap();
        assert_eq!(clients, Some(vec![4]));
        let (_, clients) = run_workloads(&run_args(&["--duration", "3s"])).unwrap();
        assert_eq!(clients, Some(vec![2, 8, 32]));
        // A workload file runs at its own count, as the CI smoke's hot-lock does (16).
        let hot = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/hot-lock.toml");
        let (w, clients) = run_workloads(&run_args(&["--workload", hot])).unwrap();
        assert_eq!((w[0].name.as_str(), w[0].clients), ("hot-lock", 16));
        assert_eq!(clients, None);
    }
}
