//! lockbench: benchmark and chaos-test distributed locks on real ZooKeeper, etcd and Redis
//! (Sentinel and Redlock) clusters started in Docker.
//!
//! The seams, after Jepsen: [`cluster`] starts, inspects and breaks real clusters; [`image`]
//! builds their server images offline; [`system`] names what can be started; [`recipe`] is the
//! lock-client contract. [`spec`] reads `workloads/*.toml` into a validated workload, whose
//! random choices and precise waits come from [`workload`]; every operation lands in the [`history`]; [`stats`]
//! turns a history into a cell's `summary.json` and `acquire.hgrm`. The chaos nemesis,
//! checkers and reporters build on these.

pub mod chaos;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod docker;
pub mod doctor;
pub mod history;
pub mod image;
pub mod plan;
pub mod recipe;
pub mod report;
pub mod runner;
pub mod signal;
pub mod spec;
pub mod stats;
pub mod system;
pub mod workload;

pub use cluster::{Cluster, ClusterOptions};
pub use system::System;
