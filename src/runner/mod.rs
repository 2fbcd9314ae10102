//! `lockbench run`: expands the plan, starts each system's cluster once, runs its cells one after
//! another (fresh key prefix per cell), and writes every cell's folder as soon as it finishes.

mod backend;
mod client;
mod outcome;
mod output;
pub mod progress;
pub mod worker;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{Barrier, broadcast};

use crate::history::{Clock, Event, HistoryHandle, Recorder};
use crate::plan::{Cell, Plan};
use crate::recipe::{Recipe, RecipeConfig};
use crate::report::{Exporters, RunReport};
use crate::spec::ClientsAs;
use crate::stats::{CellInfo, CellSummary};

pub use backend::{Backend, DockerBackend, MockBackend};
pub use output::RunFolder;
pub use worker::{WorkerControl, WorkerError, WorkerPlan, WorkerState, WorkerTarget, Workers};

/// What a finished (or interrupted) run produced.
#[derive(Debug)]
pub struct RunOutcome {
    pub folder: PathBuf,
    pub summaries: Vec<CellSummary>,
    pub not_run: Vec<String>,
    pub interrupted: bool,
}

/// Runs every cell of `plan` on real clusters, writing results under `folder`. Ctrl-C (or
/// SIGTERM) stops after removing the cluster in use; finished cells are kept and the rest listed
/// as not run.
pub async fn run(
    plan: Plan,
    folder: RunFolder,
    progress: &dyn progress::Progress,
) -> anyhow::Result<RunOutcome> {
    run_on(
        &DockerBackend::default(),
        plan,
        folder,
        progress,
        &Exporters::standard(),
    )
    .await
}

/// [`run`] with the clients (and their clusters) coming from `backend`.
pub async fn run_on<B: Backend>(
    backend: &B,
    plan: Plan,
    folder: RunFolder,
    progress: &dyn progress::Progress,
    exporters: &Exporters,
) -> anyhow::Result<RunOutcome> {
    folder.write_plan(&plan)?;
    let mut summaries = Vec::new();
    let total = plan.cells.len();
    let mut done = 0usize;
    let mut interrupted = false;
    // Ctrl-C drops the cell in progress: its worker processes are killed and reaped by
    // `Workers`' Drop, its cluster removed by the cluster's.
    let ctrl_c = crate::signal::shutdown();
    tokio::pin!(ctrl_c);
    for (system, cells) in plan.by_system() {
        let work = async {
            let cluster = backend
                .start(system, &plan.run_id, &folder, progress)
                .await?;
            let mut out = Vec::new();
            for cell in cells {
                progress.cell_started(done + out.len() + 1, total, &cell.id().to_string());
                let summary = run_cell(backend, &cluster, &plan, cell, &folder, exporters).await?;
                progress.cell_finished(&summary);
                refresh(&folder, &plan, exporters)?;
                out.push(summary);
            }
            backend.stop(cluster, progress).await?;
            Ok::<_, anyhow::Error>(out)
        };
        tokio::select! {
            r = work => {
                let out = r?;
                done += out.len();
                summaries.extend(out);
            }
            _ = &mut ctrl_c => {
                // Dropping `work` drops the cluster, whose Drop removes its containers.
                interrupted = true;
                break;
            }
        }
    }
    progress.finish();
    if interrupted {
        // Cells of the interrupted system finished inside the dropped future: the folder has them.
        summaries = folder.read_cell_summaries()?;
    }
    sort_by_plan(&mut summaries, &plan);
    let finished: std::collections::BTreeSet<String> =
        summaries.iter().map(output::summary_id).collect();
    let not_run: Vec<String> = plan
        .cells
        .iter()
        .map(|c| c.id().to_string())
        .filter(|id| !finished.contains(id))
        .collect();
    exporters.run_updated(&RunReport {
        dir: folder.path(),
        cells: &summaries,
        not_run: &not_run,
        interrupted,
        finished: true,
    })?;
    Ok(RunOutcome {
        folder: folder.path().to_path_buf(),
        summaries,
        not_run,
        interrupted,
    })
}

async fn run_cell<B: Backend>(
    backend: &B,
    cluster: &B::Cluster,
    plan: &Plan,
    cell: &Cell,
    folder: &RunFolder,
    exporters: &Exporters,
) -> anyhow::Result<CellSummary> {
    let dir = folder.cell_dir(cell)?;
    let prefix = format!("/lockbench/{}/{}", plan.run_id, cell.id());
    let ran = run_clients(
        backend,
        cluster,
        cell,
        &prefix,
        &dir.join("history.jsonl"),
        |_| async {},
    )
    .await?;
    let info = CellInfo {
        id: cell.id(),
        warmup: cell.workload.warmup,
        end_us: Some(ran.end_us),
    };
    folder.write_cell_info(cell, &info)?;
    // The same evaluation `lockbench check` makes later from the folder alone.
    let result = crate::check::evaluate(&dir)?;
    exporters.cell_finished(&dir, &result)?;
    Ok(result.analysis.summary)
}

/// A cell's clients at work, as what runs beside them sees it (the nemesis, a test).
pub struct Running {
    /// The cell's clock: t_us = 0 at the cell's start.
    pub clock: Clock,
    /// For recording what runs beside the clients (fault events).
    pub history: HistoryHandle,
    /// Every event as it is recorded, from the cell's start.
    pub events: broadcast::Receiver<Event>,
    /// The worker processes, when the cell's clients run as processes.
    pub workers: Option<WorkerControl>,
}

/// How a cell's clients ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientsRun {
    /// When the last client stopped, µs on the cell's clock.
    pub end_us: u64,
    /// Clients that ran past every deadline and were stopped by force (an aborted task, a
    /// killed worker process).
    pub stuck: Vec<u32>,
}

/// Runs one cell's clients on `cluster` until the workload's stop, recording every event in
/// `history` (created or truncated): as tasks of this process or as worker processes, as the
/// workload's `clients_as` says. `beside` runs alongside them from the cell's start, given the
/// cell's [`Running`] view; it is awaited after the clients stop, so it must end soon after
/// (or earlier), and it is dropped if the clients fail. Keys are made under `prefix`.
pub async fn run_clients<B, F, Fut>(
    backend: &B,
    cluster: &B::Cluster,
    cell: &Cell,
    prefix: &str,
    history: &Path,
    beside: F,
) -> anyhow::Result<ClientsRun>
where
    B: Backend,
    F: FnOnce(Running) -> Fut,
    Fut: Future<Output = ()>,
{
    let wl = &cell.workload;
    let config = RecipeConfig {
        ttl: wl.lease_ttl,
        renew: wl.renew,
        prefix: prefix.to_string(),
        ..RecipeConfig::default()
    };
    match wl.clients_as {
        ClientsAs::Tasks => in_tasks(backend, cluster, cell, config, history, beside).await,
        ClientsAs::Processes { per_process } => {
            let target = backend.worker_target(cluster)?;
            let plan = worker::WorkerPlan {
                recipe: config,
                workload: wl.clone(),
                strategy: cell.strategy,
                per_process,
            };
            in_processes(&target, &plan, history, beside).await
        }
    }
}

/// Runs `clients` to their end with `beside` alongside; `beside` is dropped if they fail.
async fn alongside<T>(
    clients: impl Future<Output = anyhow::Result<T>>,
    beside: impl Future<Output = ()>,
) -> anyhow::Result<T> {
    tokio::pin!(clients, beside);
    let mut beside_done = false;
    let out = loop {
        tokio::select! {
            r = &mut clients => break r?,
            () = &mut beside, if !beside_done => beside_done = true,
        }
    };
    if !beside_done {
        beside.await;
    }
    Ok(out)
}

async fn in_tasks<B, F, Fut>(
    backend: &B,
    cluster: &B::Cluster,
    cell: &Cell,
    config: RecipeConfig,
    history: &Path,
    beside: F,
) -> anyhow::Result<ClientsRun>
where
    B: Backend,
    F: FnOnce(Running) -> Fut,
    Fut: Future<Output = ()>,
{
    let wl = &cell.workload;
    let mut clients = Vec::new();
    for _ in 0..wl.clients {
        clients.push(
            backend
                .connect(cluster, config.clone())
                .await
                .with_context(|| format!("connecting a {} client", cell.system))?,
        );
    }
    let recorder = Recorder::create(history)?;
    let running = Running {
        clock: recorder.clock(),
        history: recorder.handle(),
        events: recorder.subscribe(),
        workers: None,
    };
    let shared = Arc::new(client::CellShared::new(
        wl.clone(),
        cell.strategy,
        Arc::new(recorder.handle()),
        wl.stampede
            .map(|_| client::Rounds::Local(Barrier::new(wl.clients as usize))),
    ));
    let mut tasks = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(client::drive(c, i as u32, shared.clone())));
    }
    drop(shared);
    // A client that hangs past its own deadlines must not hang the run.
    let grace = wl.acquire_timeout + wl.lease_ttl + Duration::from_secs(10);
    let limit = match wl.stop {
        crate::spec::Stop::Duration(d) => Some(d + grace),
        crate::spec::Stop::Acquisitions(_) => None,
    };
    let clock = recorder.clock();
    let join = async {
        let started = Instant::now();
        let mut stuck = Vec::new();
        for (i, mut t) in tasks.into_iter().enumerate() {
            let remaining = limit.map(|l| l.saturating_sub(started.elapsed()));
            let joined = match remaining {
                Some(r) => tokio::time::timeout(r, &mut t).await.ok(),
                None => Some((&mut t).await),
            };
            match joined {
                Some(Ok(recipe)) => recipe.crash().await,
                // Stuck past every deadline: stop it, so it cannot act during the next cell.
                None => {
                    t.abort();
                    stuck.push(i as u32);
                }
                Some(Err(_)) => {}
            }
        }
        Ok(ClientsRun {
            end_us: clock.now_us(),
            stuck,
        })
    };
    let ran = alongside(join, beside(running)).await?;
    recorder.finish().await?;
    Ok(ran)
}

async fn in_processes<F, Fut>(
    target: &WorkerTarget,
    plan: &worker::WorkerPlan,
    history: &Path,
    beside: F,
) -> anyhow::Result<ClientsRun>
where
    F: FnOnce(Running) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut workers = Workers::spawn(target, plan).await.with_context(|| {
        format!(
            "starting {} clients in worker processes",
            target.cluster.system
        )
    })?;
    let recorder = Recorder::create(history)?;
    let running = Running {
        clock: recorder.clock(),
        history: recorder.handle(),
        events: recorder.subscribe(),
        workers: Some(workers.control()),
    };
    let handle = recorder.handle();
    let clock = recorder.clock();
    workers.start(clock).await;
    let run = async {
        let r = workers.run(&handle, &plan.workload).await?;
        Ok(ClientsRun {
            end_us: clock.now_us(),
            stuck: r.stuck,
        })
    };
    let ran = alongside(run, beside(running)).await?;
    drop(workers);
    recorder.finish().await?;
    Ok(ran)
}

/// Rewrites the run-level reports from every cell finished so far (the cell folders are the
/// record, so an interrupted run's reports are complete up to its last cell).
fn refresh(folder: &RunFolder, plan: &Plan, exporters: &Exporters) -> anyhow::Result<()> {
    let mut all = folder.read_cell_summaries()?;
    sort_by_plan(&mut all, plan);
    exporters.run_updated(&RunReport {
        dir: folder.path(),
        cells: &all,
        not_run: &[],
        interrupted: false,
        finished: false,
    })?;
    Ok(())
}

fn sort_by_plan(summaries: &mut [CellSummary], plan: &Plan) {
    let order: Vec<String> = plan.cells.iter().map(|c| c.id().to_string()).collect();
    summaries.sort_by_key(|s| order.iter().position(|id| *id == output::summary_id(s)));
}
