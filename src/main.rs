//! The `lockbench` binary: parse arguments, run the verb, map the outcome to an exit code
//! ([`Exit`]: 0 ok, 1 unsafe or regression, 2 tool error, 130 interrupted).

use std::process::ExitCode;

use clap::Parser;
use lockbench::cli::{self as verb, BaselineCommand, ChaosCommand, Cli, Command, Exit};

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
        Ok(code) => code.into(),
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

/// One verb, one function: the bodies live in [`lockbench::cli`]'s modules.
async fn run(cli: Cli) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Run(args) => verb::run::run(args).await,
        Command::Capacity(args) => verb::run::capacity(args).await,
        Command::Images {
            versions,
            all_versions,
        } => verb::cluster::images(&versions, all_versions).await,
        Command::Doctor { clients_from } => verb::cluster::doctor(&clients_from).await,
        Command::Up {
            system,
            size,
            persistence,
            server_defaults,
            tls,
            peer_latency,
        } => {
            let opts = verb::cluster::UpOptions {
                persistence,
                server_defaults,
            };
            verb::cluster::up(system, size, opts, tls.as_deref(), peer_latency).await
        }
        // Exit here: the worker's stdin thread may still be blocked in a read, which would
        // hold up the runtime's shutdown.
        Command::Worker => std::process::exit(lockbench::runner::worker::serve().await),
        Command::PeerRelay {
            port,
            latency,
            jitter,
            ready,
        } => {
            let delay = lockbench::latency::Delay {
                base: latency,
                jitter,
            };
            let Err(e) =
                lockbench::latency::transparent::serve(port, delay, ready.as_deref()).await;
            Err(anyhow::anyhow!("peer relay on 127.0.0.1:{port}: {e}"))
        }
        Command::Check { dir, write, strict } => verb::results::check(&dir, write, strict),
        Command::Report { dir } => verb::results::report(&dir),
        Command::Chaos(ChaosCommand::Render(args)) => verb::chaos::render(args),
        Command::Baseline(BaselineCommand::Save { file, from }) => {
            verb::results::baseline_save(&file, from)
        }
        Command::Baseline(BaselineCommand::Upgrade { file }) => {
            verb::results::baseline_upgrade(&file)
        }
        Command::Gate(args) => verb::results::gate(args),
        Command::Clean {
            run_id,
            target: Some(file),
        } => verb::run::clean_target(&file, run_id.as_deref()).await,
        Command::Clean {
            run_id,
            target: None,
        } => verb::cluster::clean(run_id.as_deref()).await,
    }
}
