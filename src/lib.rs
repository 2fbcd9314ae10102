//! lockbench: benchmark and chaos-test distributed locks on real clusters started in Docker:
//! ZooKeeper, etcd, Redis (Sentinel and Redlock), PostgreSQL, MariaDB and Memcached.
//!
//! A run, after Jepsen: **clusters** come up ([`cluster`], from images [`image`] builds
//! offline; each system is one folder, `service/<name>/`, listed once in [`system::registry`]:
//! its name and facts as data in [`system`], and behind [`service::LockService`] what starts,
//! probes and connects to it); **clients** run a
//! **workload** ([`workload`] reads `workloads/*.toml` and draws its random choices; [`pace`]
//! keeps its holds, thinks and arrivals on time) through a lock **recipe** (each system's in its
//! `service/<name>/` folder, both strategies side by side; [`recipe`] holds what every recipe
//! shares, and [`recipe::mock`] stands in for a server only in Docker-free tests of the
//! runner), each critical section reading and writing a protected **resource**
//! ([`resource::Register`], fenced or not, kept by the runner); the **nemesis** ([`nemesis`])
//! reads the chaos schedules `chaos/*.toml` ([`nemesis::schedule`]) and plays their faults
//! ([`fault`]: one file per kind, as verb pairs) against the cluster;
//! everything that happens lands in one **history** ([`history`]: events, operations, critical
//! sections); **checkers** ([`check`]) and **statistics** ([`stats`]) read only the history and
//! `cell.json`, through one entry point, [`check::evaluate`], that `lockbench run` and later
//! `lockbench check` share; **exporters** ([`report`]: pure renderers over a view of the run loaded
//! once, and one writer) turn each finished cell and the run so far into files ([`environment`] records what the run ran on). [`plan`] expands the matrix (each cell has a [`plan::CellId`]); [`runner`] plays
//! it, with clients from a [`runner::Backend`] (real clusters, or the mock), in-process or as
//! `lockbench worker` processes that a client-pause fault can stop as a whole.
//! [`capacity`] reads a concurrency sweep's cells (`lockbench capacity`): the Universal
//! Scalability Law fit ([`capacity::fit`]), the [`capacity::Capacity`] report and its SLO
//! answers, written to `capacity.json` and drawn by the plots exporter. [`results`] is the
//! schema they all share: `cell.json`, `summary.json` and its `safety`, the file names and the
//! version checks.
//!
//! The layers, lowest first: a module imports only modules on lines above its own (or to its
//! left on its line), so arrows only point down; no two top-level modules import each other,
//! directly or around a circle. `layering_tests` checks that the results layer (`history` to
//! `report`) imports only downward and that no circle exists; `scripts/module-deps.py` prints
//! the whole import graph.
//!
//! ```text
//! history, pace, environment, docker, signal, sync,      import no other module
//!   strategy, spec_error
//! latency                                                a delaying TCP relay (uses pace)
//! tls                                                    `up --tls`'s throw-away certificates
//! resource                                               the protected register
//! system                                                 a system's name and facts, as data
//! image                                                  server images, built offline
//! cluster                                                clusters, asking a Provider
//! recipe                                                 what every recipe shares (and the
//!                                                        mock)
//! fault                                                  fault kinds, one file each
//! workload                                               workload files and their random
//!                                                        choices
//! target                                                 target files: a cluster the user
//!                                                        runs (used by the runner)
//! service                                                each system's Provider, recipe and
//!                                                        connect
//! nemesis                                                reads chaos files and plays their
//!                                                        faults beside the clients, on the
//!                                                        stage it defines
//! plan                                                   the matrix; CellId
//! chaos_mesh                                             schedules as Chaos Mesh resources
//! results                                                the schema: cell.json, summary.json
//! stats                                                  figures from the history
//! check                                                  verdicts; evaluate = stats + checkers
//! capacity, gate                                         read results (gate's tests borrow
//!                                                        capacity's cells)
//! report                                                 exporters: cells, gate aggregates,
//!                                                        capacity
//! doctor                                                 checks the machine and the images
//! runner                                                 plays the plan (the nemesis beside
//!                                                        the clients), writes through report
//! cli, main                                              one verb, one function
//! ```
//!
//! How the layers stay free of circles: a system's name and facts
//! ([`system::System`], [`system::Facts`], including [`system::Facts::lease_clock`], which
//! says how a clock fault reaches it) are data in [`system`], which imports only [`strategy`]
//! (the [`strategy::Strategy`] names its facts list); what a system does lives above the
//! clusters and the shared recipe parts it uses, in [`service`] (its [`cluster::Provider`],
//! handed to [`cluster::Cluster::start`], its recipe and the recipe's connect). What a fault
//! kind needs of a system's recipe is data in [`system`] too: the clock model names Redis'
//! queue deadline sets by [`system::LeaseClock::REDIS_DEADLINES_SUFFIX`], which the recipe's
//! scripts use. The partition [`cluster::Grudge`]
//! lives with the cluster that keeps and applies it, so the cluster imports no fault kind; the
//! mock's pretend servers meet the nemesis in the runner's mock backend, so the recipes import
//! no fault kind either. A fault kind reads its parameters through [`fault::Params`] over a
//! [`fault::ParamSource`], which the schedule reader implements for each table, and raises
//! [`spec_error::SpecError`]s, which sit below both: the schedule imports the kinds, never the
//! reverse. The runner starts the nemesis beside the clients and hands it the cell's stage
//! ([`nemesis::Running`]), whose worker processes the nemesis and the fault kinds see only
//! through [`fault::WorkerProcesses`] (the runner's worker control implements it), so neither
//! imports the runner.
//!
//! Where a new piece goes:
//! - a system: one folder `service/<name>/` plus one line in [`system::registry`], no other
//!   file edited (images aside: a system on a new image adds its build files, `docker/<name>/`,
//!   beside the others'). The line compiles the folder's `facts.rs` into [`system`], below
//!   everything (its `System` constant and [`system::Facts`]: name, sizes, strategies, image,
//!   leaderless or not, what times its leases, which says how a clock fault reaches it, plot
//!   colour; a system on a new image also defines its [`system::ImageKind`] there), and the rest
//!   of the folder into [`service`], above the clusters and recipes it uses: that split is what
//!   keeps `system` off every circle. The folder implements [`cluster::Provider`] in its
//!   `provider.rs` (node shapes, readiness, leader, per-node health, version probe, a wiped
//!   node's rejoin) and [`service::LockService`] (recipe connect: [`recipe::AnyRecipe::new`]
//!   over any [`recipe::Recipe`]) as `SERVICE` in its `mod.rs`; its recipe lives in the folder
//!   too (`recipe.rs`, or `recipe/` when it takes several files; Redlock's uses the scripts and
//!   connections of `service/redis/recipe/`). The CLI's `--zookeeper-image`,
//!   `--etcd-image` and `--redis-image` flags name the three existing images; a new image is
//!   overridden through its `LOCKBENCH_<NAME>_IMAGE` variable. (Macro-declared modules are
//!   invisible to `cargo fmt`: `scripts/fmt` formats every file);
//! - a fault kind: one file in `fault/` (its parameters and their validation, its one name, how
//!   it resolves, starts and is undone, real or modelled: [`fault::Kind`] and
//!   [`fault::Effect`]) plus one line in the `registry!` list in `fault/mod.rs`; no other
//!   source file (the schedule test that pins the "valid kinds are ..." message lists it too).
//!   A new primitive (a way to act on a server) is a method of [`fault::Faultable`] with a
//!   default, implemented for the cluster;
//! - a checker: a file in `check/` implementing [`check::Checker`] with its own
//!   [`check::Counts`], listed in [`check::checkers`]; a count the cell's `safety` shows is a
//!   field of [`results::Safety`] (and a line of [`results::Safety::described_counts`]) that
//!   the checker's counts set;
//! - an exporter: a file in `report/` implementing [`report::Exporter`] (its files as bytes,
//!   from a [`report::model::RunView`] or [`report::model::CellView`]; [`report::writer`]
//!   writes them), listed in [`report::Exporters::reports`] when `lockbench report DIR` should
//!   draw it again from stored results (reports, plots), else in
//!   [`report::Exporters::files_only`];
//! - a report section: a [`report::sections::Section`] kind placed by
//!   [`report::sections::sections`] (the one order both reports follow), and its arm in
//!   `report/markdown.rs` and in `report/html.rs`.

// The unit tests named `timing_*` measure the harness's waits (pace, the client loop's holds,
// thinks and arrivals) against the clock; beside the other unit tests on 2 cores they measure
// those instead (CI, 2026-12-03, the lib binary alone: a 1 ms wait's p50 at 1238-1661 µs in all
// three attempts; these five by themselves passed three runs of three). scripts/test runs them
// apart, after the lanes, by this line:
// scripts/test: alone tests matching ::timing_

pub mod capacity;
pub mod chaos_mesh;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod docker;
pub mod doctor;
pub mod driver;
pub mod environment;
pub mod fault;
pub mod gate;
pub mod history;
pub mod image;
pub mod latency;
#[cfg(test)]
mod layering_tests;
pub mod nemesis;
pub mod pace;
pub mod plan;
pub mod recipe;
pub mod report;
pub mod resource;
pub mod results;
pub mod runner;
pub mod service;
pub mod signal;
pub mod spec_error;
pub mod stats;
pub mod strategy;
mod sync;
pub mod system;
pub mod target;
pub mod tls;
pub mod workload;

pub use cluster::{Cluster, ClusterOptions};
pub use system::System;
