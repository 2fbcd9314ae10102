//! The Docker engine: connecting with a deadline, run ids and labels, and removing everything a
//! run created (containers first, then networks), whether it ended cleanly or not.

use std::collections::HashMap;
use std::time::Duration;

use testcontainers::bollard::Docker;
use testcontainers::bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
};

/// Label carried by every container and network lockbench creates; its value is the run id.
pub const RUN_LABEL: &str = "lockbench.run";
/// Label naming the cluster node a container plays (e.g. `zk1`).
pub const NODE_LABEL: &str = "lockbench.node";

/// Deadline for one call to the Docker engine.
pub const DOCKER_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Docker engine problems, each with how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error(
        "no Docker engine answered at the local socket ({0}). Start it (e.g. `sudo systemctl start docker`) \
         or set DOCKER_HOST, and check that this user may use it (`docker info`)"
    )]
    Unreachable(String),
    #[error("the Docker engine did not answer within {0:?}: check `docker info`")]
    Timeout(Duration),
    #[error("Docker call failed: {0}")]
    Call(#[from] testcontainers::bollard::errors::Error),
}

/// Connects to the local engine and checks it answers, within [`DOCKER_CALL_TIMEOUT`].
pub async fn connect() -> Result<Docker, DockerError> {
    let docker =
        Docker::connect_with_defaults().map_err(|e| DockerError::Unreachable(e.to_string()))?;
    match tokio::time::timeout(DOCKER_CALL_TIMEOUT, docker.ping()).await {
        Ok(Ok(_)) => Ok(docker),
        Ok(Err(e)) => Err(DockerError::Unreachable(e.to_string())),
        Err(_) => Err(DockerError::Timeout(DOCKER_CALL_TIMEOUT)),
    }
}

/// Runs one engine call with the standard deadline.
pub async fn with_deadline<T>(
    fut: impl std::future::Future<Output = Result<T, testcontainers::bollard::errors::Error>>,
) -> Result<T, DockerError> {
    match tokio::time::timeout(DOCKER_CALL_TIMEOUT, fut).await {
        Ok(r) => r.map_err(DockerError::from),
        Err(_) => Err(DockerError::Timeout(DOCKER_CALL_TIMEOUT)),
    }
}

/// The engine's version for the environment a run records, e.g. `Docker 27.5.1 (API 1.47,
/// linux/amd64)`, or `unknown (why)`; never fails.
pub async fn engine_version() -> String {
    let docker = match connect().await {
        Ok(d) => d,
        Err(e) => return format!("unknown ({e})"),
    };
    match with_deadline(docker.version()).await {
        Ok(v) => format!(
            "Docker {} (API {}, {}/{})",
            v.version.as_deref().unwrap_or("?"),
            v.api_version.as_deref().unwrap_or("?"),
            v.os.as_deref().unwrap_or("?"),
            v.arch.as_deref().unwrap_or("?")
        ),
        Err(e) => format!("unknown ({e})"),
    }
}

/// A fresh, short run id: unique enough to tell concurrent runs on one engine apart.
pub fn new_run_id() -> String {
    use rand::Rng;
    let n: u32 = rand::rng().random();
    format!("{n:08x}")
}

/// What [`remove_labelled`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Removed {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
}

/// Removes every container (with its anonymous volumes) and network labelled with `run_id`, or
/// with any lockbench run id when `run_id` is `None`. Paused containers are resumed first so
/// they can be killed.
pub async fn remove_labelled(
    docker: &Docker,
    run_id: Option<&str>,
) -> Result<Removed, DockerError> {
    let label = match run_id {
        Some(id) => format!("{RUN_LABEL}={id}"),
        None => RUN_LABEL.to_string(),
    };
    let filters: HashMap<String, Vec<String>> = HashMap::from([("label".to_string(), vec![label])]);
    let mut removed = Removed::default();
    let list = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    for c in with_deadline(docker.list_containers(Some(list))).await? {
        let Some(id) = c.id else { continue };
        if c.state
            .as_ref()
            .map(|s| format!("{s:?}").to_lowercase().contains("paused"))
            == Some(true)
        {
            let _ = with_deadline(docker.unpause_container(&id)).await;
        }
        let opts = RemoveContainerOptionsBuilder::new()
            .force(true)
            .v(true)
            .build();
        match with_deadline(docker.remove_container(&id, Some(opts))).await {
            Ok(()) => removed.containers.push(short_name(&c.names, &id)),
            Err(DockerError::Call(e)) if is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let list = ListNetworksOptionsBuilder::new().filters(&filters).build();
    for n in with_deadline(docker.list_networks(Some(list))).await? {
        let Some(name) = n.name else { continue };
        match with_deadline(docker.remove_network(&name)).await {
            Ok(()) => removed.networks.push(name),
            Err(DockerError::Call(e)) if is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// Synchronous variant of [`remove_labelled`] for `Drop` and signal paths: runs on its own
/// thread and runtime, so it works inside or outside any tokio runtime.
pub fn remove_labelled_blocking(run_id: &str) -> Result<Removed, String> {
    let run_id = run_id.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let docker = connect().await.map_err(|e| e.to_string())?;
            remove_labelled(&docker, Some(&run_id))
                .await
                .map_err(|e| e.to_string())
        })
    })
    .join()
    .unwrap_or_else(|_| Err("cleanup thread panicked".to_string()))
}

/// True when the engine answered 404 (already gone).
pub fn is_not_found(e: &testcontainers::bollard::errors::Error) -> bool {
    matches!(
        e,
        testcontainers::bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

fn short_name(names: &Option<Vec<String>>, id: &str) -> String {
    names
        .as_ref()
        .and_then(|n| n.first())
        .map(|n| n.trim_start_matches('/').to_string())
        .unwrap_or_else(|| id.chars().take(12).collect())
}

/// A free TCP port on 127.0.0.1, to publish a container port on a fixed host port that survives
/// a container restart.
pub fn free_local_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}
