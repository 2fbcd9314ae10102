//! lockbench: benchmark and chaos-test distributed locks on real ZooKeeper, etcd and Redis
//! (Sentinel and Redlock) clusters started in Docker.
//!
//! A run, after Jepsen: **clusters** come up ([`cluster`], from images [`image`] builds
//! offline; each [`system`] is a folder behind [`system::LockService`], listed once in
//! [`system::registry::SYSTEMS`]); **clients** run a
//! **workload** ([`spec`] reads `workloads/*.toml`, and the chaos schedules `chaos/*.toml`;
//! [`workload`] draws its random choices and paces it) through a lock **recipe** ([`recipe`]: one folder of logic per system, both
//! strategies side by side; [`recipe::mock`] stands in for a server only in Docker-free tests of
//! the runner), each critical section reading and writing a protected **resource**
//! ([`resource::Register`], fenced or not, kept by the runner); the **nemesis** ([`chaos`]) breaks the cluster with faults as verb pairs;
//! everything that happens lands in one **history** ([`history`]: events, operations, critical
//! sections); **checkers** ([`check`]) and **statistics** ([`stats`]) read only the history and
//! `cell.json`, through one entry point, [`check::evaluate`], that `lockbench run` and later
//! `lockbench check` share; **exporters** ([`report`]) turn each finished cell and the run so far
//! into files ([`environment`] records what the run ran on). [`plan`] expands the matrix (each cell has a [`plan::CellId`]); [`runner`] plays
//! it, with clients from a [`runner::Backend`] (real clusters, or the mock), in-process or as
//! `lockbench worker` processes that a client-pause fault can stop as a whole.
//! [`capacity`] reads a concurrency sweep's cells (`lockbench capacity`): the Universal
//! Scalability Law fit ([`capacity::fit`]), the [`capacity::Capacity`] report and its SLO
//! answers, written to `capacity.json` and drawn by the plots exporter. [`results`] is the
//! schema they all share: `cell.json`, `summary.json` and its `safety`, the file names and the
//! version checks.
//!
//! The layers, lowest first: a module imports only modules on lines above its own (or to its
//! left on its line), so arrows only point down, except inside the one circle named below.
//! `layering_tests` checks this on the sources from `history` to `report`, and that no new
//! circle appears; `scripts/module-deps.py` prints the whole import graph and its circles.
//!
//! ```text
//! history, workload, environment, docker, signal, sync   import no other module
//! resource                                               the protected register
//! system, recipe, spec, cluster, image, chaos            systems, recipes, workload and chaos
//!                                                        files, clusters, faults: one circle
//! plan                                                   the matrix; CellId
//! results                                                the schema: cell.json, summary.json
//! stats                                                  figures from the history
//! check                                                  verdicts; evaluate = stats + checkers
//! capacity, gate                                         read results (gate's tests borrow
//!                                                        capacity's cells)
//! report                                                 exporters: cells, gate aggregates,
//!                                                        capacity
//! runner                                                 plays the plan, writes through report
//! doctor, cli, main                                      one verb, one function
//! ```
//!
//! The circle: `system` ↔ `recipe` (a recipe names its `System`; a system's folder connects
//! its recipe) stays while the four systems' recipes live outside their folders; `system` ↔
//! `cluster` (a provider starts nodes through `cluster`; a `Cluster` asks its system);
//! `system` ↔ `chaos` (a system says how a clock fault reaches it, with `chaos`'s type);
//! `chaos` ↔ `cluster` and `chaos` ↔ `spec` are issue 18's item 2 ("a fault kind is one file"),
//! not done yet; and the nemesis (`chaos`) pauses worker processes through the runner's handle
//! (`chaos` → `runner`, the one arrow that points up).
//!
//! Where a new piece goes:
//! - a system: a folder `system/<name>/` and one line in [`system::registry::SYSTEMS`], no
//!   other file edited. The folder defines its `System` constant, its [`system::Facts`] (name,
//!   sizes, strategies, image, leaderless or not, plot colour) and a [`system::LockService`]:
//!   node shapes, readiness, leader, per-node health, version probe, recipe connect
//!   ([`recipe::AnyRecipe::new`] over any [`recipe::Recipe`]) and clock access. A system on a
//!   new image also defines its [`system::ImageKind`] and adds `docker/<name>/` (the build
//!   files it embeds). Its cluster provider is the folder's `provider.rs` (node shapes,
//!   readiness, leader, health, version parsing); its recipe may live in the folder too. The
//!   four existing systems keep their recipes in `recipe/<name>/` (`redis/` holding Redlock's;
//!   moved later, when no one else edits them), which their folders connect. The CLI's `--zookeeper-image`,
//!   `--etcd-image` and `--redis-image` flags name the three existing images; a new image is
//!   overridden through its `LOCKBENCH_<NAME>_IMAGE` variable;
//! - a fault: a variant of [`chaos::Fault`] (its start and its end), using [`chaos::Faultable`];
//! - a checker: a file in `check/` implementing [`check::Checker`] with its own
//!   [`check::Counts`], listed in [`check::checkers`]; a count the cell's `safety` shows is a
//!   field of [`results::Safety`] (and a line of [`results::Safety::described_counts`]) that
//!   the checker's counts set;
//! - an exporter: a file in `report/` implementing [`report::Exporter`], listed in
//!   [`report::Exporters::reports`] when `lockbench report DIR` should draw it again from
//!   stored results (reports, plots), else in [`report::Exporters::files_only`].

pub mod capacity;
pub mod chaos;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod docker;
pub mod doctor;
pub mod environment;
pub mod gate;
pub mod history;
pub mod image;
#[cfg(test)]
mod layering_tests;
pub mod plan;
pub mod recipe;
pub mod report;
pub mod resource;
pub mod results;
pub mod runner;
pub mod signal;
pub mod spec;
pub mod stats;
mod sync;
pub mod system;
pub mod workload;

pub use cluster::{Cluster, ClusterOptions};
pub use system::System;
