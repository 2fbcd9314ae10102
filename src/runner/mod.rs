//! `lockbench run`: expands the plan, starts each system's cluster once, runs its cells one after
//! another (fresh key prefix per cell), and writes every cell's folder as soon as it finishes.

mod backend;
mod client;
mod drivers;
mod outcome;
mod output;
pub mod progress;
pub mod relays;
pub mod target_backend;
#[cfg(test)]
mod tests;
pub mod worker;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{Barrier, watch};

use crate::cluster::ConnectInfo;
use crate::fault::Faultable;
use crate::history::{Clock, Recorder};
use crate::nemesis::{self, Books, Nemesis, Running};
use crate::plan::{Cell, Plan};
use crate::recipe::{Recipe, RecipeConfig};
use crate::report::{Exporters, RunReport};
use crate::resource::Register;
use crate::results::{CellInfo, CellSummary, FailedCell};
use crate::workload::ClientsAs;

pub use backend::{Backend, ClusterShape, DockerBackend, MockBackend};
pub use output::RunFolder;
pub use target_backend::{TargetBackend, TargetCluster};
pub use worker::{WorkerControl, WorkerError, WorkerPlan, WorkerState, WorkerTarget, Workers};

/// What a finished (or interrupted) run produced.
#[derive(Debug)]
pub struct RunOutcome {
    pub folder: PathBuf,
    pub summaries: Vec<CellSummary>,
    pub not_run: Vec<String>,
    /// Cells that could not run (their cluster did not start, or the cell failed), with why.
    pub failed: Vec<FailedCell>,
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
    let mut environment = crate::environment::Environment::collect(backend.engine().await);
    environment.target = backend.record();
    folder.write_environment(&environment)?;
    let mut summaries = Vec::new();
    let mut failed: Vec<FailedCell> = Vec::new();
    let total = plan.cells.len();
    let mut done = 0usize;
    let mut interrupted = false;
    // Ctrl-C drops the cell in progress: its worker processes are killed and reaped by
    // `Workers`' Drop; the faults its nemesis left in effect are healed here through the
    // books, and then the cluster is removed by its Drop.
    let ctrl_c = crate::signal::shutdown();
    tokio::pin!(ctrl_c);
    for group in plan.by_cluster() {
        let shape = backend::ClusterShape::of(&group);
        let (system, cells) = (group.system, group.cells);
        let started = tokio::select! {
            r = backend.start(shape, &plan.run_id, &folder, progress) => r,
            _ = &mut ctrl_c => {
                interrupted = true;
                break;
            }
        };
        // A cluster that cannot start fails its own cells; the other systems still run.
        let cluster = match started {
            Ok(cluster) => cluster,
            Err(e) => {
                let why = format!("its {system} cluster did not start: {e:#}");
                progress.line(&format!(
                    "{}; its {} cell(s) fail",
                    first_line(&why),
                    cells.len()
                ));
                for cell in &cells {
                    failed.push(folder.write_cell_failure(cell, &why)?);
                }
                done += cells.len();
                refresh(&folder, &plan, &failed, exporters)?;
                continue;
            }
        };
        let server_version = backend.server_version(&cluster).await;
        let server_settings = backend.server_settings(&cluster);
        let failed_so_far = failed.clone();
        let books = Books::default();
        let work = async {
            let floor = measure_floor(backend, &cluster, &plan, system, progress).await;
            let at = Where {
                plan: &plan,
                folder: &folder,
                books: &books,
                floor: floor.as_ref(),
                server_version: server_version.as_deref(),
                server_settings: server_settings.as_ref(),
            };
            let counted = Counted {
                done,
                total,
                failed_before: &failed_so_far,
            };
            run_group(backend, &cluster, &cells, at, counted, progress, exporters).await
        };
        let ran = tokio::select! {
            r = work => Some(r),
            _ = &mut ctrl_c => None,
        };
        match ran {
            Some(Err(e)) => {
                backend.abandon(cluster).await;
                return Err(e);
            }
            Some(Ok((out, lost))) if !lost.is_empty() => {
                done += out.len() + lost.len();
                summaries.extend(out);
                failed.extend(lost);
                heal_left(&books, &cluster, system).await.ok();
                backend.abandon(cluster).await;
                refresh(&folder, &plan, &failed, exporters)?;
            }
            Some(Ok((out, _))) => {
                done += out.len();
                summaries.extend(out);
                backend.stop(cluster, progress).await?;
            }
            None => {
                interrupted = true;
                heal_left(&books, &cluster, system).await?;
                // Removes the containers (or a target's keys).
                backend.abandon(cluster).await;
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
        failed: &failed,
        interrupted,
        finished: true,
    })?;
    Ok(RunOutcome {
        folder: folder.path().to_path_buf(),
        summaries,
        not_run,
        failed,
        interrupted,
    })
}

/// How long a cluster may take to be healthy before a cell (a Redis master restarted by the
/// previous cell is turned into a replica by Sentinel some 13 s after its kill).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long healing what a cell's nemesis left in effect may take in the runner's cleanup path.
const HEAL_DEADLINE: Duration = Duration::from_secs(120);

/// Heals the faults a nemesis left in effect (its future was dropped, or its heal failed), with
/// no history to record them in: the cell is over. A failure is an error, so no next cell runs
/// on a broken cluster.
async fn heal_left<C: Faultable>(
    books: &Books,
    cluster: &C,
    system: crate::system::System,
) -> anyhow::Result<()> {
    if books.in_effect().await == 0 {
        return Ok(());
    }
    let clock = Clock::start();
    match tokio::time::timeout(HEAL_DEADLINE, books.heal(cluster, clock, None)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(anyhow::anyhow!(
            "healing the {system} cluster after a cell failed: {e}; the cluster is removed \
             (`lockbench clean` removes anything left)"
        )),
        Err(_) => anyhow::bail!(
            "healing the {system} cluster took over {} s; the cluster is removed (`lockbench \
             clean` removes anything left)",
            HEAL_DEADLINE.as_secs()
        ),
    }
}

/// How long a floor probe may take in all.
const FLOOR_DEADLINE: Duration = Duration::from_secs(60);

/// The handoff floor of `cluster`, measured before its cells under the run's own prefix;
/// `None` where the plan asks for no sample (`--floor-samples 0`), the backend measures none
/// or the probe failed (said on the progress line): the cells run all the same, without
/// `handoff_over_floor`.
async fn measure_floor<B: Backend>(
    backend: &B,
    cluster: &B::Cluster,
    plan: &Plan,
    system: crate::system::System,
    progress: &dyn progress::Progress,
) -> Option<crate::results::floor::HandoffFloor> {
    if plan.floor_samples == 0 {
        return None;
    }
    let prefix = format!("{}/{}/floor", backend.key_root(cluster), plan.run_id);
    let started = Instant::now();
    let probe = backend.floor(cluster, &prefix, plan.floor_samples);
    let measured = tokio::time::timeout(FLOOR_DEADLINE, probe)
        .await
        .unwrap_or_else(|_| Some(Err(format!("took over {} s", FLOOR_DEADLINE.as_secs()))))?;
    match measured {
        Ok(f) => {
            progress.line(&format!(
                "{system} handoff floor: p50 {:.2} ms, p99 {:.2} ms ({} samples, {} failed, {:.1} s)",
                f.p50_us as f64 / 1000.0,
                f.p99_us as f64 / 1000.0,
                f.samples,
                f.failed,
                started.elapsed().as_secs_f64()
            ));
            Some(f)
        }
        Err(why) => {
            progress.line(&format!(
                "{system} handoff floor not measured: {why}; its cells have no handoff_over_floor"
            ));
            None
        }
    }
}

/// What a cell runs within beyond its cluster: the plan, the run's folder, the faults' books
/// and the cluster's handoff floor.
#[derive(Clone, Copy)]
struct Where<'a> {
    plan: &'a Plan,
    folder: &'a RunFolder,
    books: &'a Books,
    floor: Option<&'a crate::results::floor::HandoffFloor>,
    /// The version the cluster's servers reported, where the backend asks.
    server_version: Option<&'a str>,
    /// The settings the cluster's servers started with, where the backend started them.
    server_settings: Option<&'a crate::system::settings::SettingsRecord>,
}

/// Where a cluster's cells stand in the run: cells done before them, all cells, and the cells
/// that failed before them (the reports list them while the run goes on).
#[derive(Clone, Copy)]
struct Counted<'a> {
    done: usize,
    total: usize,
    failed_before: &'a [FailedCell],
}

/// Runs one cluster's cells in order: their summaries, and the cells that failed. A cell that
/// fails (its cluster may be broken now) fails the rest of its cluster's cells with it, each
/// with the reason; the run goes on with the next cluster.
async fn run_group<B: Backend>(
    backend: &B,
    cluster: &B::Cluster,
    cells: &[&Cell],
    at: Where<'_>,
    counted: Counted<'_>,
    progress: &dyn progress::Progress,
    exporters: &Exporters,
) -> anyhow::Result<(Vec<CellSummary>, Vec<FailedCell>)> {
    let mut out = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        progress.cell_started(
            counted.done + out.len() + 1,
            counted.total,
            &cell.id().to_string(),
        );
        match run_cell(backend, cluster, cell, at, exporters).await {
            Ok(summary) => {
                progress.cell_finished(&summary);
                refresh(at.folder, at.plan, counted.failed_before, exporters)?;
                out.push(summary);
            }
            Err(e) => {
                let why = format!("{e:#}");
                progress.line(&format!("cell {} failed: {}", cell.id(), first_line(&why)));
                let mut lost = vec![at.folder.write_cell_failure(cell, &why)?];
                let after = format!(
                    "not run: cell {} failed before it on the same cluster",
                    cell.id()
                );
                for rest in &cells[i + 1..] {
                    lost.push(at.folder.write_cell_failure(rest, &after)?);
                }
                return Ok((out, lost));
            }
        }
    }
    Ok((out, Vec::new()))
}

/// The first line of a (multi-line) reason, for a progress line.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

async fn run_cell<B: Backend>(
    backend: &B,
    cluster: &B::Cluster,
    cell: &Cell,
    at: Where<'_>,
    exporters: &Exporters,
) -> anyhow::Result<CellSummary> {
    let Where {
        plan,
        folder,
        books,
        floor,
        server_version,
        server_settings,
    } = at;
    let dir = folder.cell_dir(cell)?;
    let prefix = format!(
        "{}/{}/{}",
        backend.key_root(cluster),
        plan.run_id,
        cell.id()
    );
    // Calm cells run exactly as before: nothing beside the clients.
    let nemesis = (!cell.chaos.is_calm()).then(|| {
        let length = match cell.workload.stop {
            crate::workload::Stop::Duration(d) => d,
            crate::workload::Stop::Acquisitions(_) => nemesis::OPEN_CELL_BOUND,
        };
        Nemesis::new(&cell.chaos, length, &prefix, books.clone())
    });
    // Every cell starts on a healthy cluster: a node an earlier fault left down or outside its
    // cluster would make this cell run one member short without saying so.
    let settle = crate::fault::wait_until(SETTLE_TIMEOUT, || cluster.healthy())
        .await
        .map_err(|why| {
            anyhow::anyhow!(
                "before cell {}: the {} cluster was not healthy (every node up, one leader) \
                 within {} s: {why}. The cell was not run; the node logs say why a node did not \
                 come back",
                cell.id(),
                cell.system,
                SETTLE_TIMEOUT.as_secs()
            )
        })?;
    let ran = run_clients(
        backend,
        cluster,
        cell,
        &prefix,
        &dir.join("history.jsonl"),
        |running| async move {
            if let Some(n) = nemesis {
                n.play(cluster, running).await;
            }
        },
    )
    .await;
    // The nemesis healed when the clients stopped; this covers a nemesis dropped on its
    // deadline or a heal that failed (retried here), on success and error alike.
    heal_left(books, cluster, cell.system).await?;
    let ran = ran?;
    let info = CellInfo {
        id: cell.id(),
        warmup: cell.workload.warmup,
        end_us: Some(ran.end_us),
        resource: cell.workload.resource,
        expect: cell.expect(),
        settle_ms: Some(settle.as_secs_f64() * 1000.0),
        lock: cell.workload.lock,
        server_version: server_version.map(str::to_string),
        server_settings: server_settings.cloned(),
    };
    folder.write_cell_info(cell, &info, floor)?;
    // The same evaluation `lockbench check` makes later from the folder alone.
    let result = crate::check::evaluate(&dir)?;
    exporters.cell_finished(&dir, &result)?;
    Ok(result.analysis.summary)
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
/// cell's [`Running`] view; when the clients stop or fail, [`Running::stopped`] turns true and
/// `beside` is awaited (at most [`BESIDE_GRACE`], then dropped) before the history closes.
/// Keys are made under `prefix`.
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
        crash_between_steps_every: wl.crash_between_steps_every,
        retry: wl.retry,
        resolve_timeout: wl.resolve_timeout,
        poll_interval: wl.poll_interval,
        credentials: backend.credentials(cluster),
        ..RecipeConfig::default()
    };
    // With client latency, every client dials the cell's relays instead of the servers; the
    // relays live until the clients have stopped.
    let relays = if wl.client_latency.is_zero() && !cell.chaos.slows_clients() {
        None
    } else {
        let info = backend.connect_info(cluster).ok_or_else(|| {
            anyhow::anyhow!(
                "cell {} adds latency between clients and servers (client_latency or a slow \
                 fault), which needs clients that reach their servers over the network (real \
                 clusters or a target): remove client_latency, --client-latency or the slow \
                 fault for this backend",
                cell.id()
            )
        })?;
        let (relays, via) = relays::Relays::start(&info, wl.client_latency).await?;
        Some((Arc::new(relays), via))
    };
    let via = relays.as_ref().map(|(_, via)| via);
    let links = relays
        .as_ref()
        .map(|(r, _)| r.clone() as Arc<dyn crate::fault::ClientLinks>);
    if let Some(library) = &cell.library {
        let info = match via {
            Some(via) => Some(via.clone()),
            None => backend.connect_info(cluster),
        };
        return drivers::in_drivers(library, cell, info, &config, links, history, beside).await;
    }
    match wl.clients_as {
        ClientsAs::Tasks => {
            in_tasks(
                backend,
                cluster,
                cell,
                config,
                (via, links),
                history,
                beside,
            )
            .await
        }
        ClientsAs::Processes { per_process } => {
            let mut target = backend.worker_target(cluster)?;
            if let Some(via) = via {
                target.cluster = via.clone();
            }
            let plan = worker::WorkerPlan {
                recipe: config,
                workload: wl.clone(),
                strategy: cell.strategy,
                per_process,
            };
            in_processes(&target, &plan, links, history, beside).await
        }
    }
}

/// How long what runs beside the clients may take once they stopped (the nemesis heals: a
/// restarted node may take a while to come back); past it, it is dropped and the runner heals
/// through the nemesis' books.
pub const BESIDE_GRACE: Duration = Duration::from_secs(120);

/// Runs `clients` to their end with `beside` alongside; then tells `beside` the clients
/// stopped (`stop`) and waits for it (at most [`BESIDE_GRACE`]), whether the clients succeeded
/// or failed, so the nemesis heals and records it before the history closes.
async fn alongside<T>(
    clients: impl Future<Output = anyhow::Result<T>>,
    beside: impl Future<Output = ()>,
    stop: watch::Sender<bool>,
) -> anyhow::Result<T> {
    tokio::pin!(clients, beside);
    let mut beside_done = false;
    let out = loop {
        tokio::select! {
            r = &mut clients => break r,
            () = &mut beside, if !beside_done => beside_done = true,
        }
    };
    let _ = stop.send(true);
    if !beside_done {
        let _ = tokio::time::timeout(BESIDE_GRACE, beside).await;
    }
    out
}

async fn in_tasks<B, F, Fut>(
    backend: &B,
    cluster: &B::Cluster,
    cell: &Cell,
    config: RecipeConfig,
    (via, links): (
        Option<&ConnectInfo>,
        Option<Arc<dyn crate::fault::ClientLinks>>,
    ),
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
        let client = match via {
            None => backend.connect(cluster, config.clone()).await,
            Some(via) => backend.connect_via(cluster, via, config.clone()).await,
        };
        clients.push(client.with_context(|| format!("connecting a {} client", cell.system))?);
    }
    let processes = Processes {
        workers: None,
        links,
    };
    drive_tasks(clients, cell, processes, history, beside).await
}

/// What a nemesis reaches of a cell's clients besides the cluster.
pub(crate) struct Processes {
    /// The processes a client pause stops, where the clients run in processes of their own.
    pub workers: Option<Arc<dyn crate::fault::WorkerProcesses>>,
    /// The clients' links to the servers, behind latency relays.
    pub links: Option<Arc<dyn crate::fault::ClientLinks>>,
}

/// Runs `clients` (connected, one a cell client, in order) as tasks of this process to the
/// cell's end, `beside` alongside, recording into `history`.
pub(crate) async fn drive_tasks<R, F, Fut>(
    clients: Vec<R>,
    cell: &Cell,
    processes: Processes,
    history: &Path,
    beside: F,
) -> anyhow::Result<ClientsRun>
where
    R: Recipe,
    F: FnOnce(Running) -> Fut,
    Fut: Future<Output = ()>,
{
    let wl = &cell.workload;
    let recorder = Recorder::create(history)?;
    let (stop, stopped) = watch::channel(false);
    let running = Running {
        clock: recorder.clock(),
        history: recorder.handle(),
        events: recorder.subscribe(),
        workers: processes.workers,
        links: processes.links,
        stopped,
    };
    let register = cell_register(wl, Arc::new(recorder.handle()));
    let shared = Arc::new(client::CellShared::new(
        wl.clone(),
        cell.strategy,
        Arc::new(recorder.handle()),
        wl.stampede
            .map(|_| client::Rounds::Local(Barrier::new(wl.clients as usize))),
        client::Resource::Local(Arc::new(register)),
    ));
    let mut tasks = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(client::drive(c, i as u32, shared.clone())));
    }
    drop(shared);
    // Dropped (Ctrl-C), the cell stops its clients: a detached task would go on writing to the
    // cluster (on a target, after its keys were removed).
    let _abort = AbortOnDrop(tasks.iter().map(|t| t.abort_handle()).collect());
    // A client that hangs past its own deadlines must not hang the run.
    let grace = client::drain(wl);
    let limit = match wl.stop {
        crate::workload::Stop::Duration(d) => Some(d + grace),
        crate::workload::Stop::Acquisitions(_) => None,
    };
    let clock = recorder.clock();
    let join = async {
        let started = Instant::now();
        let mut stuck = Vec::new();
        let mut finished = Vec::new();
        for (i, mut t) in tasks.into_iter().enumerate() {
            let remaining = limit.map(|l| l.saturating_sub(started.elapsed()));
            let joined = match remaining {
                Some(r) => tokio::time::timeout(r, &mut t).await.ok(),
                None => Some((&mut t).await),
            };
            match joined {
                Some(Ok(recipe)) => finished.push(recipe),
                // Stuck past every deadline: stop it, so it cannot act during the next cell.
                None => {
                    t.abort();
                    stuck.push(i as u32);
                }
                Some(Err(_)) => {}
            }
        }
        let end_us = clock.now_us();
        // The clients that ended their loop shut down cleanly, together (each bounded by one
        // request deadline), after the cell's last event.
        futures::future::join_all(finished.into_iter().map(Recipe::close)).await;
        Ok(ClientsRun { end_us, stuck })
    };
    let ran = alongside(join, beside(running), stop).await?;
    recorder.finish().await?;
    Ok(ran)
}

/// Aborts its tasks when dropped (finished tasks ignore it).
struct AbortOnDrop(Vec<tokio::task::AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

async fn in_processes<F, Fut>(
    target: &WorkerTarget,
    plan: &worker::WorkerPlan,
    links: Option<Arc<dyn crate::fault::ClientLinks>>,
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
    let (stop, stopped) = watch::channel(false);
    let running = Running {
        clock: recorder.clock(),
        history: recorder.handle(),
        events: recorder.subscribe(),
        workers: Some(Arc::new(workers.control())),
        links,
        stopped,
    };
    let handle = recorder.handle();
    let clock = recorder.clock();
    // The register stays here, out of reach of a worker's pause; workers ask for each access.
    let register = cell_register(&plan.workload, Arc::new(handle.clone()));
    workers.start(clock).await;
    let run = async {
        let r = workers.run(&handle, &plan.workload, &register).await?;
        Ok(ClientsRun {
            end_us: clock.now_us(),
            stuck: r.stuck,
        })
    };
    let ran = alongside(run, beside(running), stop).await?;
    drop(workers);
    recorder.finish().await?;
    Ok(ran)
}

/// Rewrites the run-level reports from every cell finished so far (the cell folders are the
/// record, so an interrupted run's reports are complete up to its last cell).
fn refresh(
    folder: &RunFolder,
    plan: &Plan,
    failed: &[FailedCell],
    exporters: &Exporters,
) -> anyhow::Result<()> {
    let mut all = folder.read_cell_summaries()?;
    sort_by_plan(&mut all, plan);
    exporters.run_updated(&RunReport {
        dir: folder.path(),
        cells: &all,
        not_run: &[],
        failed,
        interrupted: false,
        finished: false,
    })?;
    Ok(())
}

fn sort_by_plan(summaries: &mut [CellSummary], plan: &Plan) {
    let order: Vec<String> = plan.cells.iter().map(|c| c.id().to_string()).collect();
    summaries.sort_by_key(|s| order.iter().position(|id| *id == output::summary_id(s)));
}

/// A cell's protected register: one per key, or per key and permit for a semaphore.
pub(crate) fn cell_register(
    wl: &crate::workload::Workload,
    sink: Arc<dyn crate::history::EventSink>,
) -> Register {
    let register = Register::new(wl.resource, sink);
    match wl.lock {
        crate::workload::LockKind::Semaphore { permits } => register.with_permits(permits),
        _ => register,
    }
}
