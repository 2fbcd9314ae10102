//! A cell whose clients are a lock library's, run by its driver processes
//! ([`crate::driver`]): the drivers are started and greeted, their clients run the same client
//! loop as the recipes' (as tasks of the runner, each a request to its driver), a client pause
//! stops a driver's whole process group, and the cell's folder gets `driver.json`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use super::{ClientsRun, Processes, client, drive_tasks};
use crate::cluster::ConnectInfo;
use crate::driver::{Deadlines, DriverGroup, GroupSpec, Manifest};
use crate::nemesis::Running;
use crate::plan::{Cell, ClientLibrary};
use crate::recipe::RecipeConfig;
use crate::workload::ClientsAs;

/// Runs `cell`'s clients through `library`'s driver, connecting to `info`.
pub(super) async fn in_drivers<F, Fut>(
    library: &ClientLibrary,
    cell: &Cell,
    info: Option<ConnectInfo>,
    config: &RecipeConfig,
    links: Option<Arc<dyn crate::fault::ClientLinks>>,
    history: &Path,
    beside: F,
) -> anyhow::Result<ClientsRun>
where
    F: FnOnce(Running) -> Fut,
    Fut: Future<Output = ()>,
{
    let manifest = Manifest::load(&library.manifest)?;
    // A backend without a network (the in-memory mock) gives the driver no endpoint: only a
    // driver that keeps its own lock, as the protocol's scripted test driver does, runs there.
    let cluster = info.unwrap_or_else(|| ConnectInfo {
        system: cell.system,
        endpoints: Vec::new(),
        sentinel_endpoints: Vec::new(),
        address_map: Default::default(),
        master_name: None,
    });
    let dir = history.parent().unwrap_or(Path::new("."));
    let wl = &cell.workload;
    let spec = GroupSpec {
        manifest: &manifest,
        system: cell.system,
        cluster,
        clients: wl.clients,
        per_process: match wl.clients_as {
            ClientsAs::Processes { per_process } => Some(per_process),
            ClientsAs::Tasks => None,
        },
        lease_ttl: wl.lease_ttl,
        prefix: config.prefix.clone(),
        deadlines: Deadlines {
            answer_grace: config.request_timeout,
            // A paused driver's write must still land when it answers: as long as a stuck
            // client is given before it is stopped.
            access: client::drain(wl),
        },
        dir,
    };
    // The leases alive before the drivers start, where the server can list them: those alive
    // at the end and not now are the ones the library's clients left.
    let leases = crate::service::of(cell.system).live_leases();
    let before = match (leases, spec.cluster.endpoints.is_empty()) {
        (Some(list), false) => list(&spec.cluster).await.ok(),
        _ => None,
    };
    let cluster = spec.cluster.clone();
    let (group, clients) = DriverGroup::start(spec)
        .await
        .map_err(|e| anyhow::anyhow!("cell {}: {}", cell.id(), e.0))?;
    let group = Arc::new(group);
    let processes = Processes {
        workers: Some(group.clone()),
        links,
    };
    let ran = drive_tasks(clients, cell, processes, history, beside).await;
    // Recorded before the drivers are told to exit: their exit is no break.
    let mut record = group.record(&manifest);
    if let (Some(list), Some(before)) = (leases, before)
        && let Ok(after) = list(&cluster).await
    {
        record.leases_left = Some(after.iter().filter(|id| !before.contains(id)).count() as u64);
    }
    group.finish().await;
    std::fs::write(
        dir.join("driver.json"),
        serde_json::to_string_pretty(&record)?,
    )
    .with_context(|| format!("writing {}", dir.join("driver.json").display()))?;
    ran
}
