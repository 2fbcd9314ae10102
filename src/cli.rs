//! Command-line interface: verbs as subcommands.

use clap::{Parser, Subcommand};

use crate::system::System;

/// Benchmark and chaos-test distributed locks on real ZooKeeper, etcd and Redis clusters.
#[derive(Debug, Parser)]
#[command(name = "lockbench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// ZooKeeper image to run instead of lockbench/zookeeper:3.8 (same as LOCKBENCH_ZOOKEEPER_IMAGE).
    #[arg(long, global = true, value_name = "IMAGE")]
    pub zookeeper_image: Option<String>,
    /// etcd image to run instead of lockbench/etcd:3.4 (same as LOCKBENCH_ETCD_IMAGE).
    #[arg(long, global = true, value_name = "IMAGE")]
    pub etcd_image: Option<String>,
    /// Redis image (Sentinel and Redlock too) instead of lockbench/redis:7.0 (LOCKBENCH_REDIS_IMAGE).
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
    Clean {
        /// Only those of this run id (the `lockbench.run` label), e.g. from `up`'s JSON.
        #[arg(long = "run")]
        run_id: Option<String>,
    },
}
