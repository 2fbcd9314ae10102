//! Command-line interface: verbs as subcommands (clap derive, here), and one function per verb
//! in the submodules, which `main.rs` dispatches to.
// The doc comments here are `--help` texts for a terminal, where `<run>` means a placeholder,
// not an HTML tag (the guide's reference escapes them: src/cli/reference.rs).
#![allow(rustdoc::invalid_html_tags)]

pub mod chaos;
pub mod cluster;
pub mod reference;
pub mod results;
pub mod run;

use clap::{Parser, Subcommand};

use crate::system::System;

/// Benchmark and chaos-test distributed locks on real clusters: ZooKeeper, etcd, Redis (with
/// Sentinel, and Redlock), PostgreSQL, MariaDB and Memcached.
#[derive(Debug, Parser)]
#[command(name = "lockbench", version, about, after_long_help = EXAMPLES_TOP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// ZooKeeper image to run instead of the default version's (same as
    /// LOCKBENCH_ZOOKEEPER_IMAGE); refused beside `--systems zookeeper@VERSION`.
    #[arg(long, global = true, value_name = "IMAGE")]
    pub zookeeper_image: Option<String>,
    /// etcd image to run instead of the default version's (same as LOCKBENCH_ETCD_IMAGE);
    /// refused beside `--systems etcd@VERSION`.
    #[arg(long, global = true, value_name = "IMAGE")]
    pub etcd_image: Option<String>,
    /// Redis image (Sentinel and Redlock too) instead of the default version's (same as
    /// LOCKBENCH_REDIS_IMAGE); refused beside `--systems redis@VERSION` or `redlock@VERSION`.
    #[arg(long, global = true, value_name = "IMAGE")]
    pub redis_image: Option<String>,
}

impl Cli {
    /// The image overrides given as flags, as (environment variable, image) pairs.
    pub fn image_overrides(&self) -> Vec<(String, String)> {
        use crate::system::ImageKind;
        [
            (ImageKind::Zookeeper, &self.zookeeper_image),
            (ImageKind::Etcd, &self.etcd_image),
            (ImageKind::Redis, &self.redis_image),
        ]
        .into_iter()
        .filter_map(|(k, v)| {
            v.as_ref()
                .map(|v| (crate::image::override_var(k), v.clone()))
        })
        .collect()
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the comparison: every system × strategy × workload × chaos × clients cell, results
    /// on disk.
    /// With no arguments: one hot key (workloads/client-sweep.toml, 8 s cells) at 2, 8 and 32
    /// clients on ZooKeeper, etcd, Redis and Redlock under both strategies, 24 cells in about 4
    /// minutes (`--all-systems` adds PostgreSQL, MariaDB and Memcached).
    #[command(after_long_help = EXAMPLES_RUN)]
    Run(RunArgs),
    /// Sweep the client count of one system × strategy × workload on one cluster, fit the
    /// Universal Scalability Law to the throughput, and write capacity.json, the capacity
    /// plot and the reports into the run folder.
    #[command(after_long_help = EXAMPLES_CAPACITY)]
    Capacity(CapacityArgs),
    /// Build the server images that are missing or out of date (no registry needed): every
    /// system's default version, and the versions named.
    #[command(after_long_help = EXAMPLES_IMAGES)]
    Images {
        /// Other versions to build too, comma-separated (`etcd@3.4,redis@valkey-8.1`); a run
        /// that names a version builds its image on first use anyway.
        #[arg(long, value_delimiter = ',', value_name = "SYSTEM@VERSION")]
        versions: Vec<crate::system::SystemAt>,
        /// Build every version of every system.
        #[arg(long, conflicts_with = "versions")]
        all_versions: bool,
    },
    /// Check the Docker engine, the images and the library drivers, and say how to fix what is
    /// missing.
    #[command(after_long_help = EXAMPLES_DOCTOR)]
    Doctor {
        /// Start these drivers (as `run --clients-from` names them) and check each answers a
        /// ping, readying what its first start makes (a virtual environment, a compile); without
        /// it, the shipped drivers' manifests and programs are checked, none started.
        #[arg(long, value_delimiter = ',', value_name = "DRIVER")]
        clients_from: Vec<String>,
    },
    /// Start a cluster, print its endpoints and leader as JSON, keep it until Ctrl-C.
    #[command(after_long_help = EXAMPLES_UP)]
    Up {
        /// The system to start, at its default version or at one named after `@`.
        #[arg(help = systems_at_help())]
        system: crate::system::SystemAt,
        /// Number of server nodes.
        #[arg(long, help = sizes_help())]
        size: Option<usize>,
        /// Redis/Redlock: keep keys across restarts (appendonly, fsync always).
        #[arg(long)]
        persistence: bool,
        /// Start the servers with their packages' defaults: the settings lockbench tunes (the
        /// guide's systems chapter lists them) are not given; the JSON's server_settings says
        /// which differ.
        #[arg(long)]
        server_defaults: bool,
        /// etcd and Redis: also serve TLS (etcd on its TLS client port, Redis data nodes on
        /// tls-port), asking clients for a certificate; a throw-away CA and the client's
        /// certificate and key are written into DIR (ca.pem, client.pem, client-key.pem) and
        /// the JSON lists tls_endpoints.
        #[arg(long, value_name = "DIR")]
        tls: Option<std::path::PathBuf>,
        /// One-way latency added between the servers (e.g. 2ms, up to 1s): every connection
        /// between two nodes goes through a relay in the opener's container.
        #[arg(long, value_parser = one_way_latency)]
        peer_latency: Option<std::time::Duration>,
    },
    /// Recompute statistics and safety verdicts of a run folder or one cell folder from the
    /// stored histories, with no Docker; print the table, say whether each cell matches what
    /// the run wrote, and exit as `run` does (1 when a cell expected safe is unsafe). Rewrites
    /// nothing unless --write.
    #[command(after_long_help = EXAMPLES_CHECK)]
    Check {
        /// A run folder (results/<run>) or one of its cells/<id> folders.
        dir: std::path::PathBuf,
        /// Rewrite the cells' summary.json and acquire.hgrm and the run's summary.json,
        /// report.md and report.html from the recomputed results.
        #[arg(long)]
        write: bool,
        /// Exit 1 also when a verdict is unknown or a design expected unsafe was not exposed.
        #[arg(long)]
        strict: bool,
    },
    /// Draw the reports of a run folder again (report.md, report.html and the plots) from
    /// its stored results, with no Docker; the results themselves are left as they are.
    #[command(after_long_help = EXAMPLES_REPORT)]
    Report {
        /// A run folder, e.g. results/latest or results/<run>.
        dir: std::path::PathBuf,
    },
    /// Baselines for `lockbench gate`.
    #[command(subcommand, after_long_help = EXAMPLES_BASELINE)]
    Baseline(BaselineCommand),
    /// Chaos schedules for other engines.
    #[command(subcommand, after_long_help = EXAMPLES_RENDER)]
    Chaos(ChaosCommand),
    /// Compare a run with a baseline cell by cell: exit 1 on a speed regression past both the
    /// metric's floor and the two sides' spreads, or on any safety rule broken; 0 otherwise; 2
    /// when it cannot judge (a missing cell, another schema). Prints a Markdown table.
    #[command(after_long_help = EXAMPLES_GATE)]
    Gate(GateArgs),
    /// Remove every container and network any lockbench run left behind.
    #[command(after_long_help = EXAMPLES_CLEAN)]
    Clean {
        /// Only those of this run id (the `lockbench.run` label), e.g. from `up`'s JSON.
        #[arg(long = "run")]
        run_id: Option<String>,
        /// Instead of containers: remove what runs left under this target's prefix (with
        /// --run, only `<prefix>/<run id>`), e.g. after a run was killed before its clean-up.
        #[arg(long, value_name = "FILE")]
        target: Option<std::path::PathBuf>,
    },
    /// A client process of `lockbench run --clients-as processes`: reads its setup as JSON
    /// lines on stdin and writes its events as JSON lines on stdout. Not for use by hand.
    #[command(hide = true)]
    Worker,
    /// The relay between servers that `peer_latency` runs inside each server's container
    /// (bind-mounted there, started before the server): relays every connection redirected
    /// to 127.0.0.1:PORT with the delay. Not for use by hand.
    #[command(hide = true)]
    PeerRelay {
        /// The port on 127.0.0.1 the nat redirect sends peer connections to.
        #[arg(long)]
        port: u16,
        /// One-way delay added each way.
        #[arg(long, value_parser = one_way_latency)]
        latency: std::time::Duration,
        /// Up to this much more per chunk.
        #[arg(long, value_parser = one_way_latency, default_value = "0ms")]
        jitter: std::time::Duration,
        /// A file created once the relay listens.
        #[arg(long)]
        ready: Option<std::path::PathBuf>,
    },
}

// `run --help` groups its flags under these headings.
const RUN_WHAT: &str = "What to run";
const RUN_HOW_LONG: &str = "How long";
const RUN_FAULTS: &str = "Faults and added latency";
const RUN_OUTPUT: &str = "Output";

// The examples that end each verb's long help (`--help`); the guide's CLI reference shows them
// too, as it is generated from this definition.
const EXAMPLES_TOP: &str = "Examples:
  lockbench run                                   the default comparison (about five minutes)
  lockbench run --chaos chaos/kill-leader.toml    the same under a leader kill every 10 s
  lockbench report results/latest                 draw the reports of the last run again";
const EXAMPLES_RUN: &str = "Examples:
  lockbench run --systems etcd,redis --clients 1,4,16 --duration 10s
  lockbench run --systems etcd@3.4,etcd@3.5 --repeat 3 --chaos chaos/kill-leader.toml
  lockbench run --workload workloads/held-locks.toml --chaos chaos/pause-node.toml --strict
  lockbench run --target targets/prod-etcd.toml --duration 30s";
const EXAMPLES_CAPACITY: &str = "Examples:
  lockbench capacity --system etcd --strategy predecessor --clients 1,2,4,8,16
  lockbench capacity --system redis --strategy herd --clients 1,4,16,64 --slo p99=50ms --repeat 3";
const EXAMPLES_IMAGES: &str = "Examples:
  lockbench images
  lockbench images --versions etcd@3.4,redis@valkey-8.1
  LOCKBENCH_DEBIAN_MIRROR=http://deb.debian.org/debian lockbench images --all-versions";
const EXAMPLES_DOCTOR: &str = "Examples:
  lockbench doctor
  lockbench doctor --clients-from kazoo,curator
  DOCKER_HOST=unix:///run/docker.sock lockbench doctor";
const EXAMPLES_UP: &str = "Examples:
  lockbench up etcd
  lockbench up redis@valkey-8.1
  lockbench up zookeeper --size 5 --peer-latency 2ms
  lockbench up redis --tls /tmp/lockbench-tls";
const EXAMPLES_CHECK: &str = "Examples:
  lockbench check results/latest
  lockbench check results/latest/cells/etcd-predecessor-hot-lock-c16 --strict
  lockbench check results/latest --write";
const EXAMPLES_REPORT: &str = "Examples:
  lockbench report results/latest
  lockbench report results/20261206T035000Z-hot-lock";
const EXAMPLES_BASELINE: &str = "Examples:
  lockbench baseline save results/baselines/mine.json
  lockbench baseline save results/baselines/mine.json --from results/run-a --from results/run-b";
const EXAMPLES_RENDER: &str = "Examples:
  lockbench chaos render --engine chaos-mesh --selector app=etcd chaos/kill-leader.toml
  lockbench chaos render --engine chaos-mesh --primitive isolate --pod etcd-0 --peers etcd-1,etcd-2";
const EXAMPLES_GATE: &str = "Examples:
  lockbench gate --current results/latest
  lockbench gate --baseline results/baselines/ci-smoke.json --normalize 3 --junit gate.xml
  lockbench gate --pair hot-lock=hot-lock-b --current results/latest
  lockbench gate --pair etcd@3.4=etcd@3.5 --current results/latest";
const EXAMPLES_CLEAN: &str = "Examples:
  lockbench clean
  lockbench clean --run 3f2a9c1e
  lockbench clean --target targets/prod-etcd.toml";

/// Arguments of `lockbench run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Systems to run, comma-separated, each at its default version or at one named after `@`
    /// (`etcd@3.4,etcd@3.5`: two versions side by side as separate cells); default: the
    /// default comparison's.
    #[arg(help_heading = RUN_WHAT, long, value_delimiter = ',', help = systems_at_help(),
          default_values_t = crate::system::default_systems().into_iter().map(crate::system::SystemAt::default_of))]
    pub systems: Vec<crate::system::SystemAt>,
    /// Every system lockbench has, the ones outside the default comparison too.
    #[arg(help_heading = RUN_WHAT, long, conflicts_with = "systems")]
    pub all_systems: bool,
    /// Run on a cluster you already run, named by a target file (repeatable, one per system;
    /// see the guide's "Your own clusters", docs/book/src/own-clusters.md): nothing is started, every key lives under the
    /// target's prefix and is removed at the end. The systems are the targets'.
    #[arg(help_heading = RUN_WHAT, long = "target", value_name = "FILE", conflicts_with_all = ["systems", "all_systems"])]
    pub targets: Vec<std::path::PathBuf>,
    /// Start the servers with their packages' defaults: the settings lockbench tunes (ZooKeeper's
    /// tickTime and election wait, Sentinel's down-after, ...; the guide's systems chapter lists
    /// them) are not given, the ones the containers need are. Each cell records which
    /// (server_settings in cell.json). Docker clusters only.
    #[arg(help_heading = RUN_WHAT, long, conflicts_with = "targets")]
    pub server_defaults: bool,
    /// Strategies, comma-separated; default: the workload's.
    #[arg(help_heading = RUN_WHAT, long, value_delimiter = ',', help = strategies_help())]
    pub strategies: Option<Vec<crate::recipe::Strategy>>,
    /// Lock libraries whose drivers run cells of their own beside the recipes',
    /// comma-separated: a driver's manifest, its folder, or a name found as
    /// drivers/<name>/driver.toml (see the guide's "Library drivers", docs/book/src/drivers.md).
    /// Each runs on the systems its manifest names, its name standing for the strategy in the
    /// cell id; default: none.
    #[arg(help_heading = RUN_WHAT, long, value_delimiter = ',', value_name = "DRIVER")]
    pub clients_from: Vec<String>,
    /// Workload files (repeatable); default: the built-in client-sweep workload at 2, 8 and 32
    /// clients.
    #[arg(help_heading = RUN_WHAT, long = "workload")]
    pub workloads: Vec<std::path::PathBuf>,
    /// Client counts, comma-separated, each 1 to 4096; default: the workload's (2,8,32 for the
    /// built-in one).
    #[arg(
        help_heading = RUN_WHAT,
        long,
        value_delimiter = ',',
        value_parser = clap::value_parser!(u32).range(crate::workload::CLIENTS.0..=crate::workload::CLIENTS.1)
    )]
    pub clients: Option<Vec<u32>>,
    /// Seed for every random choice; default: the workload's.
    #[arg(help_heading = RUN_WHAT, long)]
    pub seed: Option<u64>,
    /// Run each cell's clients as tasks of this process or as `lockbench worker` processes
    /// (which a pause fault can stop one at a time); default: the workload's `clients_as`.
    #[arg(help_heading = RUN_WHAT, long, value_enum)]
    pub clients_as: Option<ClientsAsArg>,
    /// Clients per worker process, 1 to 4096; implies --clients-as processes; default: the
    /// workload's `clients_per_process`, else 1.
    #[arg(
        help_heading = RUN_WHAT,
        long,
        value_parser = clap::value_parser!(u32).range(1..=crate::workload::CLIENTS.1)
    )]
    pub clients_per_process: Option<u32>,
    /// Length of each cell (e.g. 30s), 1s to 1day; default: the workload's.
    #[arg(help_heading = RUN_HOW_LONG, long, value_parser = run_duration)]
    pub duration: Option<std::time::Duration>,
    /// Run every cell N times, 1 to 100, in rounds (every cell once, then again), each round
    /// on fresh clusters and on seeds of its own (round k: the seed plus k - 1); the run's summary.json keeps every repetition and their median and
    /// spread, which `lockbench baseline save` and `lockbench gate` read.
    #[arg(help_heading = RUN_HOW_LONG, long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Handoffs the floor probe measures on each cluster before its cells, 0 to 10000 (0: no
    /// floor, and no handoff ÷ floor column); each is a full release-to-grant chain.
    #[arg(
        help_heading = RUN_HOW_LONG,
        long,
        default_value_t = crate::plan::DEFAULT_FLOOR_SAMPLES as u32,
        value_parser = clap::value_parser!(u32).range(0..=10_000)
    )]
    pub floor_samples: u32,
    /// Chaos schedule files (repeatable), each a coordinate of the matrix: chaos/*.toml, e.g.
    /// chaos/kill-leader.toml; default: none (no faults).
    #[arg(help_heading = RUN_FAULTS, long = "chaos", value_name = "FILE")]
    pub chaos: Vec<std::path::PathBuf>,
    /// One-way latency added between clients and servers, comma-separated, each 0 to 1s (e.g.
    /// 0ms,1ms,2ms): every workload runs at each, through relays that hold every chunk this
    /// long each way, named <workload>-lat<latency> when several are given; default: the
    /// workload's client_latency (none).
    #[arg(help_heading = RUN_FAULTS, long, value_delimiter = ',', value_parser = one_way_latency)]
    pub client_latency: Option<Vec<std::time::Duration>>,
    /// One-way latency added between the servers of each cluster, comma-separated, each 0 to
    /// 1s (e.g. 0ms,2ms): every workload runs at each, on a cluster of its own whose
    /// containers relay every connection between nodes, named <workload>-peer<latency> when
    /// several are given; default: the workload's peer_latency (none). Docker clusters only.
    #[arg(help_heading = RUN_FAULTS, long, value_delimiter = ',', value_parser = one_way_latency)]
    pub peer_latency: Option<Vec<std::time::Duration>>,
    /// Folder under which the run's folder is made (default: results/).
    #[arg(help_heading = RUN_OUTPUT, long)]
    pub out: Option<std::path::PathBuf>,
    /// Exit 1 also when a verdict is unknown or a design expected unsafe was not exposed
    /// (without it only a cell expected safe and judged unsafe fails the run).
    #[arg(help_heading = RUN_OUTPUT, long)]
    pub strict: bool,
}

/// Arguments of `lockbench capacity`.
#[derive(Debug, clap::Args)]
pub struct CapacityArgs {
    /// The system to sweep.
    #[arg(long)]
    pub system: System,
    /// The waiting strategy.
    #[arg(long, help = strategy_help())]
    pub strategy: crate::recipe::Strategy,
    /// Workload file; default: the built-in hot-lock workload.
    #[arg(long)]
    pub workload: Option<std::path::PathBuf>,
    /// Client counts, comma-separated, at least 3 distinct, each 1 to 4096, e.g. 1,2,4,8,16.
    #[arg(
        long,
        required = true,
        value_delimiter = ',',
        value_parser = clap::value_parser!(u32).range(crate::workload::CLIENTS.0..=crate::workload::CLIENTS.1)
    )]
    pub clients: Vec<u32>,
    /// Latency objective, e.g. p99=50ms: report the most clients that keep it.
    #[arg(long)]
    pub slo: Option<crate::capacity::Slo>,
    /// Length of each cell (e.g. 30s), 1s to 1day; default: the workload's.
    #[arg(long, value_parser = run_duration)]
    pub duration: Option<std::time::Duration>,
    /// Seed for every random choice; default: the workload's.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Folder under which the run's folder is made (default: results/).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Run every count N times, 1 to 100, in rounds (every count once, then again), each
    /// round on a fresh cluster; every repetition is a point of the fit and of the SLO check
    /// (all repetitions at a count must keep it).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
}

/// `lockbench chaos ...`.
#[derive(Debug, Subcommand)]
pub enum ChaosCommand {
    /// Print Chaos Mesh resources (YAML, built from typed bindings of its CRDs): every fault
    /// of a chaos schedule FILE on the pods --selector picks, or one --primitive on one --pod
    /// (named lockbench-<primitive>-<pod>, for a target's fault commands to apply and delete).
    #[command(after_long_help = EXAMPLES_RENDER)]
    Render(RenderArgs),
}

/// The engines `lockbench chaos render` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// Chaos Mesh (chaos-mesh.org/v1alpha1): PodChaos, NetworkChaos, TimeChaos.
    ChaosMesh,
}

/// The primitives `lockbench chaos render --primitive` renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrimitiveArg {
    /// PodChaos pod-kill, or container-kill of --container.
    Kill,
    /// PodChaos pod-failure, until deleted.
    Pause,
    /// NetworkChaos partition from --peers, both ways, until deleted.
    Isolate,
    /// NetworkChaos delay of --latency (+ --jitter), until deleted.
    Slow,
    /// TimeChaos shifting the clocks by --offset (--back: backwards), until deleted.
    Clock,
}

/// Arguments of `lockbench chaos render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// The engine to write for.
    #[arg(long, value_enum)]
    pub engine: Engine,
    /// The namespace of the resources and of the pods they act on.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// A chaos schedule file (chaos/*.toml); or give --primitive and --pod.
    #[arg(required_unless_present = "primitive", conflicts_with = "primitive")]
    pub file: Option<std::path::PathBuf>,
    /// With FILE: the label of the cluster's pods, KEY=VALUE (repeatable), e.g. app=etcd.
    #[arg(long = "selector", value_name = "KEY=VALUE", requires = "file")]
    pub selectors: Vec<String>,
    /// One fault primitive instead of a schedule.
    #[arg(long, value_enum, requires = "pod")]
    pub primitive: Option<PrimitiveArg>,
    /// The pod the primitive acts on.
    #[arg(long, requires = "primitive")]
    pub pod: Option<String>,
    /// isolate: the pods it is cut from, comma-separated (a target command's {peers}).
    #[arg(long, value_delimiter = ',')]
    pub peers: Vec<String>,
    /// slow: the one-way latency, e.g. 20ms.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub latency: Option<std::time::Duration>,
    /// slow: up to this much more per packet.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub jitter: Option<std::time::Duration>,
    /// clock: how far the clocks move, e.g. 30s.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub offset: Option<std::time::Duration>,
    /// clock: move them backwards instead of forwards.
    #[arg(long)]
    pub back: bool,
    /// kill (the primitive, or a schedule's kill faults): kill only this container of the pod
    /// (PodChaos container-kill; the kubelet restarts it in the same pod) instead of the pod.
    #[arg(long)]
    pub container: Option<String>,
}

/// `lockbench baseline ...`.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Write a baseline (each cell's per-metric medians, spreads and repetitions, its safety,
    /// and the environment) from finished runs, best several made with `run --repeat N`.
    #[command(after_long_help = EXAMPLES_BASELINE)]
    Save {
        /// The baseline file to write, e.g. results/baselines/ci-smoke.json.
        file: std::path::PathBuf,
        /// The run folder to read (default: results/latest); repeat it to pool several runs of
        /// the same matrix, whose fresh clusters put the spread between clusters into the
        /// baseline.
        #[arg(long)]
        from: Vec<std::path::PathBuf>,
    },
    /// Convert a baseline of an older layout to this lockbench's, in place (a baseline from
    /// before cells carried a server version gets each system's Debian bookworm version, which
    /// every such baseline measured).
    Upgrade {
        /// The baseline file to convert, e.g. results/baselines/ci-smoke.json.
        file: std::path::PathBuf,
    },
}

/// Arguments of `lockbench gate`.
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// The baseline file (`lockbench baseline save`); without one only safety is gated (any
    /// violation in a cell expected safe fails). Repeat it with one baseline per kind of host
    /// (with --normalize): the run is compared with the one measured on the host most like its
    /// own, the one whose machine factors lie nearest 1.
    #[arg(long)]
    pub baseline: Vec<std::path::PathBuf>,
    /// The run folder to judge (default: results/latest); repeat it to pool several runs of
    /// the same matrix (e.g. a confirmation run of the cells that regressed), whose
    /// repetitions are then taken together as one.
    #[arg(long)]
    pub current: Vec<std::path::PathBuf>,
    /// A metric's floor in percent, repeatable: throughput=20, acquire_p99=25, handoff_p50=25,
    /// wakeups_per_acquisition=10 are the defaults.
    #[arg(long = "threshold", value_name = "METRIC=PCT", value_parser = crate::gate::compare::parse_threshold)]
    pub thresholds: Vec<(crate::gate::Metric, f64)>,
    /// How many standard errors of the difference of medians (from each side's IQR and
    /// repetition count) a change must also exceed; default 3.
    #[arg(long, default_value_t = crate::gate::compare::DEFAULT_SIGMAS, value_parser = sigmas)]
    pub sigmas: f64,
    /// Compare each cell after dividing out the suite's machine factor (per metric, the median
    /// of current ÷ baseline over the cells), for a baseline made on another host; the factor
    /// itself fails past LIMIT (default 2: half the throughput, twice the latency).
    #[arg(long, value_name = "LIMIT", num_args = 0..=1,
          default_missing_value = "2", value_parser = machine_limit)]
    pub normalize: Option<f64>,
    /// Which cells share a machine factor under --normalize: `suite` (one factor over every
    /// cell, the default) or `strategy` (one per waiting strategy, over its cells: a host with
    /// less CPU slows the herd's CPU-bound storms more than predecessor queues).
    #[arg(long, value_name = "GROUPING", default_value = "suite", requires = "normalize",
          value_parser = crate::gate::machine::Grouping::parse)]
    pub normalize_by: crate::gate::machine::Grouping,
    /// Instead of a baseline file: an A/B comparison inside the run, each cell of B against
    /// the same cell of A in the same `--repeat` round (the same minute of the machine), judged
    /// on the median of the rounds' ratios B ÷ A. A and B are two workloads (`base=candidate`),
    /// two versions of one system (`etcd@3.4=etcd@3.5`), or two values of another coordinate
    /// (`strategy:herd=predecessor`, `chaos:none=kill-leader`, `system:zookeeper=etcd`; a lock
    /// library stands in the strategy: `strategy:predecessor=kazoo`). Run both in one run:
    /// `lockbench run --systems etcd@3.4,etcd@3.5 --repeat 3`.
    #[arg(long, value_name = "A=B", value_parser = crate::gate::parse_pair,
          conflicts_with_all = ["baseline", "normalize"])]
    pub pair: Option<crate::gate::Pair>,
    /// Also write the outcome as JUnit XML to this file.
    #[arg(long)]
    pub junit: Option<std::path::PathBuf>,
}

fn sigmas(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("'{text}' is not a number from 0 to 100, e.g. 3")),
    }
}

fn machine_limit(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 1.0 && v <= 100.0 => Ok(v),
        _ => Err(format!(
            "'{text}' is not a factor above 1 and at most 100, e.g. 2 (half the throughput)"
        )),
    }
}

/// `--clients-as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientsAsArg {
    /// Tasks of the runner's process.
    Tasks,
    /// `lockbench worker` processes.
    Processes,
}

impl RunArgs {
    /// `--clients-as` and `--clients-per-process` together, or why they cannot go together.
    pub fn clients_override(&self) -> Result<Option<crate::plan::ClientsOverride>, String> {
        use crate::plan::ClientsOverride;
        Ok(match (self.clients_as, self.clients_per_process) {
            (Some(ClientsAsArg::Tasks), Some(_)) => {
                return Err(
                    "--clients-per-process applies only to --clients-as processes: \
                     drop one of the two"
                        .into(),
                );
            }
            (Some(ClientsAsArg::Tasks), None) => Some(ClientsOverride::Tasks),
            (Some(ClientsAsArg::Processes) | None, Some(n)) => Some(ClientsOverride::Processes {
                per_process: Some(n),
            }),
            (Some(ClientsAsArg::Processes), None) => {
                Some(ClientsOverride::Processes { per_process: None })
            }
            (None, None) => None,
        })
    }
}

/// What the `lockbench` process exits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything ran and every verdict was as expected.
    Ok = 0,
    /// A cell expected safe was judged unsafe, or the gate found a regression.
    UnsafeOrRegression = 1,
    /// The tool could not do its job (bad input, Docker missing, a cluster that would not start).
    ToolError = 2,
    /// Ctrl-C or SIGTERM ended the run (128 + SIGINT).
    Interrupted = 130,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

/// `--duration`: a humantime duration in the range a workload file's `duration` accepts, so a
/// zero-length run is refused before any cluster starts.
fn run_duration(text: &str) -> Result<std::time::Duration, String> {
    bounded_duration(text, crate::workload::RUN_DURATION, "\"30s\" or \"2m\"")
}

fn one_way_latency(text: &str) -> Result<std::time::Duration, String> {
    bounded_duration(
        text,
        crate::workload::CLIENT_LATENCY,
        "\"1ms\" or \"500us\"",
    )
}

/// `text` as a duration within `(min, max)`; an error shows `example`s of the syntax.
fn bounded_duration(
    text: &str,
    (min, max): (std::time::Duration, std::time::Duration),
    example: &str,
) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("{e}; write a duration such as {example}"))?;
    if d < min || d > max {
        return Err(format!(
            "out of range: valid {} to {}",
            humantime::format_duration(min),
            humantime::format_duration(max)
        ));
    }
    Ok(d)
}

/// The help texts that list systems, sizes and strategies read the table of system facts, so a
/// new system shows up in `--help` by itself.
/// The systems with their versions (`docker/versions.tsv`), the default first.
fn systems_at_help() -> String {
    let names: Vec<String> = crate::system::FACTS
        .iter()
        .map(|f| format!("{} ({})", f.name, f.system.versions_text()))
        .collect();
    format!(
        "Systems, each as SYSTEM or SYSTEM@VERSION; the versions, default first: {}",
        names.join("; ")
    )
}

fn sizes_help() -> String {
    let sizes: Vec<String> = crate::system::FACTS
        .iter()
        .map(|f| format!("{} {}", f.name, f.sizes_text))
        .collect();
    format!("Number of server nodes ({})", sizes.join("; "))
}

fn strategies_help() -> String {
    format!(
        "Strategies, comma-separated ({}); default: the workload's",
        strategies_per_system()
    )
}

fn strategy_help() -> String {
    format!("The waiting strategy ({})", strategies_per_system())
}

fn strategies_per_system() -> String {
    let per_system: Vec<String> = crate::system::FACTS
        .iter()
        .map(|f| format!("{}: {}", f.name, f.system.strategies_text()))
        .collect();
    per_system.join("; ")
}
