//! `partition`: cut the servers' network into a shape for the fault's `duration`, then heal
//! exactly those cuts. The shapes ([`shape`]) are pure and tested here; the links they cut
//! ([`Grudge`]) and the iptables rules that carry a grudge out are the cluster's
//! (`cluster/grudge.rs`, `cluster/partition.rs`).
//!
//! ```toml
//! [[faults]]
//! kind = "partition"
//! shape = "halves"     # halves (default), isolate-leader, bridge, majorities-ring
//! clients = false      # true: the clients are cut off with a server's side too
//! start = "8s"
//! duration = "20s"
//! ```

pub mod shape;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use toml::{Table, Value};

pub use crate::cluster::{CLIENTS, Grudge};
pub use shape::{SHAPES, Shape};

use super::{Ctx, Effect, Ended, Fault, FaultError, Faultable, Kind, Param, Params, Scene};
use super::{Started, clock::Ticker};
use crate::spec_error::SpecError;

/// Cut the servers' network into a shape, then heal it.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// Which nodes stop hearing which.
    pub shape: Shape,
    /// Whether the clients are cut off with the servers' sides too (by default they keep
    /// reaching every node they reached before).
    pub clients: bool,
}

/// Cut these links; the undo removes them (and keeps other partitions' cuts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioned {
    /// The cut links.
    pub grudge: Grudge,
}

impl Kind for Partition {
    const NAME: &'static str = "partition";
    const PARAMETERS: &'static [Param] = &[Param::text("shape"), Param::flag("clients")];

    fn read(p: &Params<'_>) -> Result<Self, SpecError> {
        Ok(Partition {
            shape: match p.text("shape").map(str::trim) {
                None => Shape::Halves,
                Some(s) => SHAPES.into_iter().find(|x| x.name() == s).ok_or_else(|| {
                    let names: Vec<&str> = SHAPES.iter().map(|x| x.name()).collect();
                    p.invalid(
                        "shape",
                        format!("\"{s}\""),
                        &format!("valid shapes are {}", names.join(", ")),
                    )
                })?,
            },
            clients: p.flag("clients").unwrap_or(false),
        })
    }

    fn primitives(&self) -> Vec<&'static str> {
        // Cutting the clients off is done on the servers' side of their links, which a
        // target's isolate-from-peers command does not cover.
        if self.clients {
            vec!["isolate", "isolate-clients"]
        } else {
            vec!["isolate"]
        }
    }

    fn write(&self, t: &mut Table) {
        t.insert("shape".into(), Value::String(self.shape.name().into()));
        t.insert("clients".into(), Value::Boolean(self.clients));
    }

    async fn resolve<C: Faultable>(
        &self,
        scene: &Scene<'_, C>,
        rng: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        let servers = &scene.servers;
        let l = if self.shape == Shape::IsolateLeader {
            scene.leader().await?
        } else {
            None
        };
        let mut grudge = self
            .shape
            .grudge(servers, l.as_deref(), rng)
            .map_err(|e| e.to_string())?;
        if self.clients {
            // The clients go with a server drawn from the seed: they reach what it
            // reaches (the isolated leader, a half, one side of a bridge).
            let home = servers.choose(rng).ok_or("the cluster has no servers")?;
            grudge = grudge.with_clients_beside(home);
        }
        grudge = grudge.with_companions(&scene.on.companions());
        let targets = grudge
            .blocked()
            .iter()
            .map(|(n, cut)| {
                let cut: Vec<&str> = cut.iter().map(String::as_str).collect();
                format!("{n} cut from {}", cut.join(","))
            })
            .collect();
        Ok((Partitioned { grudge }.into(), targets))
    }
}

impl Effect for Partitioned {
    type Kind = Partition;

    fn nodes(&self) -> Vec<String> {
        self.grudge.nodes()
    }

    async fn start<C: Faultable>(
        &self,
        on: &C,
        _: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        let r = on.partition(&self.grudge).await;
        (r.map(|()| Started::default()).map_err(Into::into), None)
    }

    async fn undo<C: Faultable>(&self, on: &C, _: &Ctx<'_>) -> Result<Ended, FaultError> {
        on.heal_partition(&self.grudge).await?;
        Ok(Ended::default())
    }
}
