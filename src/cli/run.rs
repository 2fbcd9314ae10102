//! The verbs that play a plan on real clusters: `run` and `capacity`.

use std::path::Path;

use super::results::verdicts;
use super::{CapacityArgs, Exit, RunArgs};
use crate::docker;
use crate::plan::{Overrides, Plan};
use crate::runner::{Backend, DockerBackend, RunOutcome, TargetBackend};
use crate::workload::Workload;

/// The built-in default workload (the file in workloads/, embedded so the binary runs anywhere).
const DEFAULT_WORKLOAD: &str = include_str!("../../workloads/hot-lock.toml");

/// `lockbench run`: the comparison; exit 1 when a cell is not as its workload expects.
pub async fn run(args: RunArgs) -> anyhow::Result<Exit> {
    // Everything is validated before any container starts.
    let workloads = if args.workloads.is_empty() {
        vec![Workload::from_str(DEFAULT_WORKLOAD, "hot-lock")?]
    } else {
        args.workloads
            .iter()
            .map(|p| Workload::from_file(p))
            .collect::<Result<Vec<_>, _>>()?
    };
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
        clients: args.clients,
        duration: args.duration,
        seed: args.seed,
        client_latency: args.client_latency,
        peer_latency: args.peer_latency,
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
        return Ok(verdicts(&outcome.summaries, args.strict));
    }
    let systems = if args.all_systems {
        crate::system::ALL_SYSTEMS.to_vec()
    } else {
        args.systems.clone()
    };
    let plan = Plan::expand(&run_id, &systems, &workloads, &ov)?
        .repeated(args.repeat)
        .with_floor_samples(args.floor_samples as usize);
    for s in &plan.skipped {
        eprintln!("lockbench: skipped {s}");
    }
    docker::connect().await?;
    let heading = format!("{} cells", plan.cells.len());
    let backend = DockerBackend::default();
    let Some(outcome) = play(&backend, plan, args.out.as_deref(), &name, &heading, "").await?
    else {
        return Ok(Exit::Interrupted);
    };
    Ok(verdicts(&outcome.summaries, args.strict))
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
    Ok(verdicts(&outcome.summaries, false))
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
