//! `lockbench run`: expands the plan, starts each system's cluster once, runs its cells one after
//! another (fresh key prefix per cell), and writes every cell's folder as soon as it finishes.

mod backend;
mod client;
mod outcome;
mod output;
pub mod progress;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::Barrier;

use crate::history::Recorder;
use crate::plan::{Cell, Plan};
use crate::recipe::{Recipe, RecipeConfig};
use crate::report::{Exporters, RunReport};
use crate::stats::{CellInfo, CellSummary};

pub use backend::{Backend, DockerBackend, MockBackend};
pub use output::RunFolder;

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
        &DockerBackend,
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
    let wl = &cell.workload;
    let config = RecipeConfig {
        ttl: wl.lease_ttl,
        renew: wl.renew,
        prefix: format!("/lockbench/{}/{}", plan.run_id, cell.id()),
        ..RecipeConfig::default()
    };
    let mut clients = Vec::new();
    for _ in 0..wl.clients {
        clients.push(
            backend
                .connect(cluster, config.clone())
                .await
                .with_context(|| format!("connecting a {} client", cell.system))?,
        );
    }
    let recorder = Recorder::create(&dir.join("history.jsonl"))?;
    let shared = Arc::new(client::CellShared {
        workload: wl.clone(),
        strategy: cell.strategy,
        history: recorder.handle(),
        started: recorder.clock().instant_at(0),
        granted: AtomicU64::new(0),
        barrier: wl.stampede.map(|_| Barrier::new(wl.clients as usize)),
    });
    let mut tasks = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(client::drive(c, i as u32, shared.clone())));
    }
    // A client that hangs past its own deadlines must not hang the run.
    let grace = wl.acquire_timeout + wl.lease_ttl + Duration::from_secs(10);
    let limit = match wl.stop {
        crate::spec::Stop::Duration(d) => Some(d + grace),
        crate::spec::Stop::Acquisitions(_) => None,
    };
    let started = Instant::now();
    for mut t in tasks {
        let remaining = limit.map(|l| l.saturating_sub(started.elapsed()));
        let joined = match remaining {
            Some(r) => tokio::time::timeout(r, &mut t).await.ok(),
            None => Some((&mut t).await),
        };
        match joined {
            Some(Ok(recipe)) => recipe.crash().await,
            // Stuck past every deadline: stop it, so it cannot act during the next cell.
            None => t.abort(),
            Some(Err(_)) => {}
        }
    }
    let end_us = shared.history.now_us();
    drop(shared);
    recorder.finish().await?;
    let info = CellInfo {
        id: cell.id(),
        warmup: wl.warmup,
        end_us: Some(end_us),
    };
    folder.write_cell_info(cell, &info)?;
    // The same evaluation `lockbench check` makes later from the folder alone.
    let result = crate::check::evaluate(&dir)?;
    exporters.cell_finished(&dir, &result)?;
    Ok(result.analysis.summary)
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
