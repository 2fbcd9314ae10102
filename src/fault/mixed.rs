//! `mixed`: the composition. Each occurrence draws one of its `kinds` from the schedule's seed
//! and runs it with the mixed fault's timing and window (Jepsen's combined nemesis); the drawn
//! kind is what starts, what is undone and what the history names. A mixed fault never starts
//! itself, so its effect type has no values ([`Undrawn`]).
//!
//! ```toml
//! [[faults]]
//! kind = "mixed"
//! kinds = [{ kind = "kill", target = "leader" }, { kind = "partition", shape = "halves" }, "pause-node"]
//! every = "8s"
//! jitter = "2s"
//! duration = "4s"
//! ```

use rand::Rng;
use rand::rngs::StdRng;
use toml::{Table, Value};

use super::{Ctx, Effect, Ended, Fault, FaultError, FaultKind, Faultable, Kind, Param, Params};
use super::{Refusal, Scene, Started, clock::Ticker};
use crate::spec_error::SpecError;

/// Each occurrence draws one of these kinds from the schedule's seed (never `mixed` again).
#[derive(Debug, Clone, PartialEq)]
pub struct Mixed {
    /// The kinds drawn from, at least one.
    pub kinds: Vec<FaultKind>,
}

/// A mixed fault's effect: none, since an occurrence starts the kind it drew.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undrawn {}

impl Kind for Mixed {
    const NAME: &'static str = "mixed";
    const PARAMETERS: &'static [Param] = &[Param::kinds("kinds")];
    const COMPOSITE: bool = true;

    fn read(p: &Params<'_>) -> Result<Self, SpecError> {
        let kinds = p.kinds("kinds").ok_or_else(|| {
            p.missing(
                "kinds",
                "list the kinds to draw from, e.g. kinds = [\"kill\", { kind = \"partition\", \
                 shape = \"bridge\" }, \"pause-node\"]",
            )
        })??;
        if kinds.is_empty() {
            return Err(p.out_of_range("kinds", "[]", "one or more kinds to draw from"));
        }
        Ok(Mixed { kinds })
    }

    fn primitives(&self) -> Vec<&'static str> {
        let mut all: Vec<&'static str> =
            self.kinds.iter().flat_map(FaultKind::primitives).collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    fn write(&self, t: &mut Table) {
        let entries = self
            .kinds
            .iter()
            .map(|k| {
                let mut e = Table::new();
                super::write(&mut e, k);
                Value::Table(e)
            })
            .collect();
        t.insert("kinds".into(), Value::Array(entries));
    }

    fn draw(&self, rng: &mut StdRng) -> FaultKind {
        self.kinds[rng.random_range(0..self.kinds.len())].clone()
    }

    fn pauses_clients(&self) -> bool {
        self.kinds.iter().any(FaultKind::pauses_clients)
    }

    fn slows_clients(&self) -> bool {
        self.kinds.iter().any(FaultKind::slows_clients)
    }

    fn refusal(&self) -> Option<Refusal> {
        self.kinds.iter().find_map(FaultKind::refusal)
    }

    async fn resolve<C: Faultable>(
        &self,
        _: &Scene<'_, C>,
        _: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        Err("a mixed fault reached the nemesis undrawn (a timeline bug)".into())
    }
}

impl Effect for Undrawn {
    type Kind = Mixed;

    fn nodes(&self) -> Vec<String> {
        match *self {}
    }

    async fn start<C: Faultable>(
        &self,
        _: &C,
        _: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        match *self {}
    }

    async fn undo<C: Faultable>(&self, _: &C, _: &Ctx<'_>) -> Result<Ended, FaultError> {
        match *self {}
    }
}
