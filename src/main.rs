//! The `lockbench` binary: parse arguments, run the verb, map the outcome to an exit code
//! ([`Exit`]: 0 ok, 1 unsafe or regression, 2 tool error, 130 interrupted).

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use lockbench::cli::{Cli, Command, Exit};
use lockbench::cluster::{Cluster, ClusterOptions};
use lockbench::{docker, doctor, image, system};

fn main() -> ExitCode {
    let cli = Cli::parse();
    for (var, image) in cli.image_overrides() {
        // SAFETY: no other thread exists yet; the runtime starts below.
        unsafe { std::env::set_var(var, image) };
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lockbench: cannot start the async runtime: {e}");
            return Exit::ToolError.into();
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lockbench: error: {}", describe(&e));
            Exit::ToolError.into()
        }
    }
}

/// The error and its causes joined by ": ", each said once: this project's errors quote their
/// cause in their own message (so it reads well on its own) and also return it as `source()`,
/// so `{:#}` printed e.g. the OS error of an unreadable workload file twice.
fn describe(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run_comparison(args).await,
        Command::Capacity(args) => run_capacity(args).await,
        Command::Images => {
            let reports =
                image::ensure(&system::ALL_IMAGES, &|line| eprintln!("lockbench: {line}")).await?;
            println!("{}", serde_json::to_string_pretty(&reports)?);
            Ok(Exit::Ok.into())
        }
        Command::Doctor => {
            let findings = doctor::diagnose().await;
            let mut ok = true;
            for f in &findings {
                let mark = if f.ok { "ok     " } else { "PROBLEM" };
                println!("{mark} {:<16} {}", f.what, f.detail);
                if let Some(fix) = &f.fix {
                    println!("        fix: {fix}");
                }
                ok &= f.ok;
            }
            Ok(if ok {
                Exit::Ok.into()
            } else {
                Exit::ToolError.into()
            })
        }
        Command::Up {
            system,
            size,
            persistence,
        } => {
            let opts = ClusterOptions {
                size,
                ready_timeout: None,
                redis: lockbench::cluster::RedisOptions { persistence },
            };
            if let Some(s) = size {
                system.validate_size(s)?;
            }
            image::ensure(&[system.image_kind()], &|line| {
                eprintln!("lockbench: {line}")
            })
            .await?;
            let run_id = docker::new_run_id();
            eprintln!("lockbench: starting {system} (run {run_id}); Ctrl-C stops and removes it");
            let start = Cluster::start_with_run_id(system, opts, &run_id);
            // Ctrl-C during start-up must still remove what was started.
            let cluster = tokio::select! {
                c = start => c.with_context(|| format!("starting {system}"))?,
                _ = lockbench::signal::shutdown() => {
                    let removed = docker::remove_labelled(&docker::connect().await?, Some(&run_id)).await?;
                    eprintln!("lockbench: interrupted; removed {} containers", removed.containers.len());
                    return Ok(Exit::Interrupted.into());
                }
            };
            println!("{}", serde_json::to_string_pretty(&cluster.info().await)?);
            lockbench::signal::shutdown().await;
            let removed = cluster.teardown().await?;
            eprintln!(
                "lockbench: removed {} containers and {} network(s)",
                removed.containers.len(),
                removed.networks.len()
            );
            Ok(Exit::Ok.into())
        }
        Command::Worker => {
            // Exit here: the worker's stdin thread may still be blocked in a read, which would
            // hold up the runtime's shutdown.
            std::process::exit(lockbench::runner::worker::serve().await)
        }
        Command::Check { dir, write, strict } => {
            let files = lockbench::report::Exporters::files_only();
            let cells = lockbench::check::folder::recheck(&dir, write.then_some(&files))?;
            let summaries: Vec<_> = cells
                .iter()
                .map(|c| c.result.analysis.summary.clone())
                .collect();
            lockbench::report::Exporters(vec![Box::new(lockbench::report::terminal::Terminal)])
                .run_updated(&lockbench::report::RunReport {
                    dir: &dir,
                    cells: &summaries,
                    not_run: &[],
                    interrupted: false,
                    finished: true,
                })?;
            eprintln!(
                "lockbench: {}",
                lockbench::check::folder::comparison(&cells, write)
            );
            Ok(verdicts(&summaries, strict).into())
        }
        Command::Report { dir } => {
            let done = lockbench::report::rebuild::rebuild(
                &dir,
                &lockbench::report::Exporters::reports(),
            )?;
            for w in &done.warnings {
                eprintln!("lockbench: {w}");
            }
            if !done.unfinished.is_empty() {
                eprintln!(
                    "lockbench: {} cell folder(s) without summary.json left out (the run stopped inside them)",
                    done.unfinished.len()
                );
            }
            println!(
                "{} cells: {} and {}",
                done.cells,
                dir.join(lockbench::report::markdown::REPORT_FILE).display(),
                dir.join(lockbench::report::html::REPORT_FILE).display()
            );
            Ok(Exit::Ok.into())
        }
        Command::Baseline(lockbench::cli::BaselineCommand::Save { file, mut from }) => {
            if from.is_empty() {
                from.push(lockbench::gate::baseline::latest_run());
            }
            let b = lockbench::gate::Baseline::of_runs(&from)?;
            b.save(&file)?;
            let reps: Vec<u32> = b.cells.iter().map(|c| c.repetitions).collect();
            println!(
                "{}: {} cells from {} ({} to {} repetitions each)",
                file.display(),
                b.cells.len(),
                b.source,
                reps.iter().min().unwrap_or(&0),
                reps.iter().max().unwrap_or(&0)
            );
            Ok(Exit::Ok.into())
        }
        Command::Gate(args) => gate(args),
        Command::Clean { run_id } => {
            let d = docker::connect().await?;
            let removed = docker::remove_labelled(&d, run_id.as_deref()).await?;
            println!("{}", serde_json::to_string_pretty(&removed)?);
            Ok(Exit::Ok.into())
        }
    }
}

/// The built-in default workload (the file in workloads/, embedded so the binary runs anywhere).
const DEFAULT_WORKLOAD: &str = include_str!("../workloads/hot-lock.toml");

async fn run_comparison(args: lockbench::cli::RunArgs) -> anyhow::Result<ExitCode> {
    use lockbench::plan::{Overrides, Plan};
    use lockbench::spec::Workload;
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
        .map(|p| lockbench::spec::Schedule::from_file(p))
        .collect::<Result<Vec<_>, _>>()?;
    let clients_as = args.clients_override().map_err(anyhow::Error::msg)?;
    let ov = Overrides {
        schedules,
        clients_as,
        strategies: args.strategies,
        clients: args.clients,
        duration: args.duration,
        seed: args.seed,
    };
    let run_id = docker::new_run_id();
    let plan = Plan::expand(&run_id, &args.systems, &workloads, &ov)?.repeated(args.repeat);
    for s in &plan.skipped {
        eprintln!("lockbench: skipped {s}");
    }
    docker::connect().await?;
    let name = workloads
        .iter()
        .map(|w| w.name.as_str())
        .collect::<Vec<_>>()
        .join("+");
    let heading = format!("{} cells", plan.cells.len());
    let Some(outcome) = play(plan, args.out.as_deref(), &name, &heading, "").await? else {
        return Ok(Exit::Interrupted.into());
    };
    Ok(verdicts(&outcome.summaries, args.strict).into())
}

/// Plays `plan` into a new run folder `name` under `out` with the progress on stderr, after
/// saying `heading` and where the results go; `None` (said, with `interrupted_note`) when
/// Ctrl-C or SIGTERM ended it.
async fn play(
    plan: lockbench::plan::Plan,
    out: Option<&std::path::Path>,
    name: &str,
    heading: &str,
    interrupted_note: &str,
) -> anyhow::Result<Option<lockbench::runner::RunOutcome>> {
    let folder = lockbench::runner::RunFolder::create(out, name)?;
    eprintln!(
        "lockbench: {heading}; results in {}",
        folder.path().display()
    );
    let progress = lockbench::runner::progress::for_stderr(plan.cells.len());
    let outcome = lockbench::runner::run(plan, folder, progress.as_ref()).await?;
    if outcome.interrupted {
        eprintln!(
            "lockbench: interrupted; not run: {}{interrupted_note}",
            outcome.not_run.join(", ")
        );
        return Ok(None);
    }
    Ok(Some(outcome))
}

/// `lockbench capacity`: the sweep run as `lockbench run` runs a plan, then the capacity
/// report, its figure and the reports written into the run folder, and a summary printed.
async fn run_capacity(args: lockbench::cli::CapacityArgs) -> anyhow::Result<ExitCode> {
    use lockbench::capacity::sweep::{self, Sweep};
    use lockbench::spec::Workload;
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
    let Some(outcome) = play(plan, args.out.as_deref(), &name, &heading, note).await? else {
        return Ok(Exit::Interrupted.into());
    };
    let capacity = sweep::finish(
        &outcome.folder,
        &outcome.summaries,
        args.slo,
        &lockbench::report::Exporters::reports(),
    )?;
    for line in sweep::summary_lines(&capacity) {
        println!("{line}");
    }
    println!(
        "{}",
        lockbench::capacity::file::path(&outcome.folder).display()
    );
    Ok(verdicts(&outcome.summaries, false).into())
}

/// `lockbench gate`: the table on stdout, JUnit when asked; exit 1 on a failure, 2 when the
/// gate cannot judge.
fn gate(args: lockbench::cli::GateArgs) -> anyhow::Result<ExitCode> {
    use lockbench::gate;
    let current = if args.current.is_empty() {
        vec![gate::baseline::latest_run()]
    } else {
        args.current
    };
    let th = gate::Thresholds {
        normalize: args.normalize,
        ..gate::Thresholds::with(&args.thresholds, args.sigmas)
    };
    let outcome = match &args.pair {
        Some(pair) => gate::gate_paired(&current, pair, &th)?,
        None => gate::gate(args.baseline.as_deref(), &current, &th)?,
    };
    print!("{}", gate::output::markdown(&outcome));
    if let Some(path) = &args.junit {
        std::fs::write(path, gate::output::junit(&outcome))
            .with_context(|| format!("writing the JUnit file {}", path.display()))?;
    }
    Ok(if outcome.passed() {
        Exit::Ok
    } else {
        Exit::UnsafeOrRegression
    }
    .into())
}

/// Says which cells are not as their workloads expect, and whether that fails the command.
fn verdicts(summaries: &[lockbench::stats::CellSummary], strict: bool) -> Exit {
    let judgement = lockbench::check::expectation::Judgement::of_summaries(summaries);
    for line in judgement.lines(strict) {
        eprintln!("lockbench: {line}");
    }
    if judgement.fails(strict) {
        Exit::UnsafeOrRegression
    } else {
        Exit::Ok
    }
}
