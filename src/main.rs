//! The `lockbench` binary: parse arguments, run the verb, map the outcome to an exit code
//! (0 ok, 1 unsafe or regression, 2 tool error).

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use lockbench::cli::{Cli, Command};
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
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lockbench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Images => {
            let reports =
                image::ensure(&system::ALL_IMAGES, &|line| eprintln!("lockbench: {line}")).await?;
            println!("{}", serde_json::to_string_pretty(&reports)?);
            Ok(ExitCode::SUCCESS)
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
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            })
        }
        Command::Up {
            system,
            size,
            persistence,
        } => {
            let opts = ClusterOptions {
                size,
                redis_persistence: persistence,
                ready_timeout: None,
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
                _ = tokio::signal::ctrl_c() => {
                    let removed = docker::remove_labelled(&docker::connect().await?, Some(&run_id)).await?;
                    eprintln!("lockbench: interrupted; removed {} containers", removed.containers.len());
                    return Ok(ExitCode::from(130));
                }
            };
            println!("{}", serde_json::to_string_pretty(&cluster.info().await)?);
            tokio::signal::ctrl_c()
                .await
                .context("waiting for Ctrl-C")?;
            let removed = cluster.teardown().await?;
            eprintln!(
                "lockbench: removed {} containers and {} network(s)",
                removed.containers.len(),
                removed.networks.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Clean { run_id } => {
            let d = docker::connect().await?;
            let removed = docker::remove_labelled(&d, run_id.as_deref()).await?;
            println!("{}", serde_json::to_string_pretty(&removed)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
