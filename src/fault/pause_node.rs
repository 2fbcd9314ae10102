//! `pause-node`: freeze servers (`docker pause`: every process of the container stops, its
//! sockets stay open) for the fault's `duration`, then thaw them (`docker unpause`).
//!
//! ```toml
//! [[faults]]
//! kind = "pause-node"
//! target = "leader"   # one (default) or leader
//! start = "5s"
//! duration = "10s"
//! ```

use rand::rngs::StdRng;
use toml::{Table, Value};

use super::target::Target::{self, Leader, One};
use super::{Ctx, Effect, Ended, Fault, FaultError, Faultable, Kind, Param, Params, Scene};
use super::{Started, clock::Ticker, on_each_node};
use crate::spec_error::SpecError;

/// Freeze a server (`docker pause`), then resume it.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseNode {
    /// `leader` or `one`.
    pub target: Target,
}

/// Paused these nodes; the undo resumes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausedNodes {
    /// The paused nodes.
    pub nodes: Vec<String>,
}

impl Kind for PauseNode {
    const NAME: &'static str = "pause-node";
    const PARAMETERS: &'static [Param] = &[Param::text("target")];

    fn read(p: &Params<'_>) -> Result<Self, SpecError> {
        Ok(PauseNode {
            target: p.target(&[Leader, One], One)?,
        })
    }

    fn primitives(&self) -> Vec<&'static str> {
        vec!["pause"]
    }

    fn write(&self, t: &mut Table) {
        t.insert("target".into(), Value::String(self.target.name().into()));
    }

    async fn resolve<C: Faultable>(
        &self,
        scene: &Scene<'_, C>,
        rng: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        let nodes = scene.nodes(self.target, rng).await?;
        Ok((
            PausedNodes {
                nodes: nodes.clone(),
            }
            .into(),
            nodes,
        ))
    }
}

impl Effect for PausedNodes {
    type Kind = PauseNode;

    fn nodes(&self) -> Vec<String> {
        self.nodes.clone()
    }

    async fn start<C: Faultable>(
        &self,
        on: &C,
        _: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        on_each_node(&self.nodes, |n| on.pause(n)).await
    }

    async fn undo<C: Faultable>(&self, on: &C, _: &Ctx<'_>) -> Result<Ended, FaultError> {
        for n in &self.nodes {
            on.resume(n).await?;
        }
        Ok(Ended::default())
    }
}
