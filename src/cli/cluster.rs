//! The verbs about Docker and clusters: `up`, `images`, `doctor`, `clean`.

use anyhow::Context;

use super::Exit;
use crate::cluster::{Cluster, ClusterOptions, RedisOptions};
use crate::{docker, doctor, image, system};

/// `lockbench images`: builds every missing or outdated image of the default versions, and of
/// the versions named (or of all), prints what was done as JSON.
pub async fn images(versions: &[system::SystemAt], all: bool) -> anyhow::Result<Exit> {
    let mut wanted: Vec<system::Version> = system::all_images()
        .into_iter()
        .map(system::Version::default_of)
        .collect();
    if all {
        wanted.extend(system::Version::all());
    }
    wanted.extend(versions.iter().map(|v| v.version));
    let reports = image::ensure(&wanted, &|line| eprintln!("lockbench: {line}")).await?;
    println!("{}", serde_json::to_string_pretty(&reports)?);
    Ok(Exit::Ok)
}

/// `lockbench doctor`: one line per check, with the fix for each problem; exit 2 on any.
/// `drivers` (as `--clients-from` names them) are started and pinged.
pub async fn doctor(drivers: &[String]) -> anyhow::Result<Exit> {
    let mut findings = doctor::diagnose().await;
    findings.extend(doctor::drivers(drivers).await);
    let mut ok = true;
    for f in &findings {
        let mark = if f.ok { "ok     " } else { "PROBLEM" };
        println!("{mark} {:<16} {}", f.what, f.detail);
        if let Some(fix) = &f.fix {
            println!("        fix: {fix}");
        }
        ok &= f.ok;
    }
    Ok(if ok { Exit::Ok } else { Exit::ToolError })
}

/// `lockbench up`: starts a cluster, prints its connection details as JSON, and removes it
/// again on Ctrl-C or SIGTERM (also when they come during start-up).
/// What `lockbench up` starts its servers with beyond size, TLS and latency.
#[derive(Debug, Clone, Copy, Default)]
pub struct UpOptions {
    /// Redis and Redlock: an append-only file, fsync always (`--persistence`).
    pub persistence: bool,
    /// The packages' defaults for the tuned settings (`--server-defaults`).
    pub server_defaults: bool,
}

pub async fn up(
    at: system::SystemAt,
    size: Option<usize>,
    up: UpOptions,
    tls: Option<&std::path::Path>,
    peer_latency: Option<std::time::Duration>,
) -> anyhow::Result<Exit> {
    let system = at.system;
    crate::cli::run::refuse_override_beside_version(&[at])?;
    let tls = match tls {
        None => None,
        Some(dir) => {
            crate::cluster::tls_port(crate::service::of(system)).context("--tls")?;
            let bundle = crate::tls::Bundle::generate(&[])
                .context("--tls: making the throw-away CA and certificates")?;
            let files = bundle.write_client_files(dir).with_context(|| {
                format!(
                    "--tls: writing the CA and client certificate into {}",
                    dir.display()
                )
            })?;
            eprintln!(
                "lockbench: TLS: CA {}, client certificate {} and key {}",
                files.ca.display(),
                files.cert.display(),
                files.key.display()
            );
            Some(std::sync::Arc::new(bundle))
        }
    };
    let opts = ClusterOptions {
        size,
        ready_timeout: None,
        redis: RedisOptions {
            persistence: up.persistence,
        },
        server_defaults: up.server_defaults,
        tls,
        peer_latency: match peer_latency {
            Some(base) if !base.is_zero() => Some(crate::cluster::PeerLatency {
                delay: crate::latency::Delay {
                    base,
                    jitter: std::time::Duration::ZERO,
                },
                relay_exe: std::env::current_exe()
                    .context("finding this program's path, to relay between the servers")?,
            }),
            _ => None,
        },
        version: Some(at.version),
    };
    if let Some(s) = size {
        system.validate_size(s)?;
    }
    image::ensure(&[at.version], &|line| eprintln!("lockbench: {line}")).await?;
    let run_id = docker::new_run_id();
    eprintln!(
        "lockbench: starting {system}@{} (run {run_id}); Ctrl-C stops and removes it",
        at.version
    );
    let start = Cluster::start_with_run_id(crate::service::of(system), opts, &run_id);
    // One listener from before start-up to the end: a signal during start-up must still
    // remove what was started, and one sent as soon as the JSON is printed must not fall
    // between two listeners (a second `shutdown()` after the print missed a SIGTERM sent at
    // once: tests/cli_up.rs waited 60 s for an exit beside another test binary).
    let stop = crate::signal::shutdown();
    tokio::pin!(stop);
    let cluster = tokio::select! {
        c = start => c.with_context(|| format!("starting {system}"))?,
        _ = &mut stop => {
            let removed = docker::remove_labelled(&docker::connect().await?, Some(&run_id)).await?;
            eprintln!("lockbench: interrupted; removed {} containers", removed.containers.len());
            return Ok(Exit::Interrupted);
        }
    };
    println!("{}", serde_json::to_string_pretty(&cluster.info().await)?);
    stop.await;
    let removed = cluster.teardown().await?;
    eprintln!(
        "lockbench: removed {} containers and {} network(s)",
        removed.containers.len(),
        removed.networks.len()
    );
    Ok(Exit::Ok)
}

/// `lockbench clean`: removes the containers and networks of one run, or of every run.
pub async fn clean(run_id: Option<&str>) -> anyhow::Result<Exit> {
    let d = docker::connect().await?;
    let removed = docker::remove_labelled(&d, run_id).await?;
    println!("{}", serde_json::to_string_pretty(&removed)?);
    Ok(Exit::Ok)
}
