//! Command-line interface: verbs as subcommands.

use clap::{Parser, Subcommand};

use crate::system::System;

/// Benchmark and chaos-test distributed locks on real ZooKeeper, etcd and Redis clusters.
#[derive(Debug, Parser)]
#[command(name = "lockbench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build the server images that are missing or out of date (no registry needed).
    Images,
    /// Check the Docker engine and the images, and say how to fix what is missing.
    Doctor,
    /// Start a cluster, print its endpoints and leader as JSON, keep it until Ctrl-C.
    Up {
        /// zookeeper, etcd, redis or redlock.
        system: System,
        /// Number of server nodes (zookeeper 1,3,4,5; etcd 1-7; redis 1-5 data nodes; redlock odd 1-9).
        #[arg(long)]
        size: Option<usize>,
        /// Redis/Redlock: keep keys across restarts (appendonly, fsync always).
        #[arg(long)]
        persistence: bool,
    },
    /// Remove every container and network any lockbench run left behind.
    Clean,
}
