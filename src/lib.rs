//! lockbench: benchmark and chaos-test distributed locks on real ZooKeeper, etcd and Redis
//! (Sentinel and Redlock) clusters started in Docker.
//!
//! The seams, after Jepsen: [`cluster`] starts, inspects and breaks real clusters; [`image`]
//! builds their server images offline; [`system`] names what can be started. Lock recipes,
//! workloads, the chaos nemesis, the history, checkers and reporters build on these.

pub mod cli;
pub mod cluster;
pub mod docker;
pub mod doctor;
pub mod history;
pub mod image;
pub mod recipe;
pub mod spec;
pub mod stats;
pub mod system;
pub mod workload;

pub use cluster::{Cluster, ClusterOptions};
pub use system::System;
