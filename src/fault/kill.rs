//! `kill`: SIGKILL nodes, and restart them after the fault's `restart_after` (its window), with
//! their data kept or wiped; the undo is done only once each restarted node serves its cluster
//! again (or [`crate::fault::REJOIN_TIMEOUT`] passed: then the window ends `info`, with why).
//!
//! ```toml
//! [[faults]]
//! kind = "kill"
//! target = "leader"      # one (default), minority, majority, leader (for Redlock: a master)
//! data = "keep"          # keep (default) or wipe
//! restart_after = "5s"   # how long the nodes stay down; 0s (default) restarts them at once
//! start = "10s"
//! ```
//!
//! Redlock's two restart variants are kills with a down time ([`RedlockRestart`]):
//! - `redlock-restart-empty` (Kleppmann's scenario): a master dies and comes back at once with
//!   no data (no persistence), so a lock it granted is forgotten while its TTL still runs and
//!   another client can gather a quorum for the same key.
//! - `redlock-restart-delayed` (the Redlock spec's remedy): the master stays down longer than
//!   the longest lock TTL, plus the spec's clock drift (1 % of the TTL + 2 ms), so every lock it
//!   knew has expired everywhere before it answers again.
//!
//! Both restart with the data wiped: without persistence that is what a restart does anyway,
//! and with persistence it forces the scenario the variant names.

use std::fmt;
use std::time::Duration;

use rand::rngs::StdRng;
use toml::{Table, Value};

use super::target::Target::{self, Leader, Majority, Minority, One};
use super::{Ctx, Effect, Ended, Fault, FaultError, Faultable, Kind, Param, Params, Scene};
use super::{Started, clock::Ticker, on_each_node, wait_until};
use crate::cluster::DataOnRestart;
use crate::spec_error::SpecError;

/// Kill nodes (SIGKILL) and restart them after the fault's window.
#[derive(Debug, Clone, PartialEq)]
pub struct Kill {
    /// `one`, `minority`, `majority` or `leader` (for Redlock: a master).
    pub target: Target,
    /// Whether the restarted nodes find their data again.
    pub data: DataOnRestart,
}

/// Killed these nodes; the undo restarts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    /// The killed nodes.
    pub nodes: Vec<String>,
    /// What a restart does with their data.
    pub data: DataOnRestart,
}

/// The name a restart's data handling has in chaos files.
pub fn data_name(d: DataOnRestart) -> &'static str {
    match d {
        DataOnRestart::Keep => "keep",
        DataOnRestart::Wipe => "wipe",
    }
}

impl Kind for Kill {
    const NAME: &'static str = "kill";
    const PARAMETERS: &'static [Param] = &[
        Param::text("target"),
        Param::text("data"),
        Param::text("restart_after"),
    ];
    const WINDOW: &'static str = "restart_after";

    fn read(p: &Params<'_>) -> Result<Self, SpecError> {
        Ok(Kill {
            target: p.target(&[One, Minority, Majority, Leader], One)?,
            data: match p.text("data").map(str::trim) {
                None | Some("keep") => DataOnRestart::Keep,
                Some("wipe") => DataOnRestart::Wipe,
                Some(other) => {
                    return Err(p.invalid(
                        "data",
                        format!("\"{other}\""),
                        "valid values are keep (the restarted node finds its data, the default), \
                         wipe (it starts empty, as a Redis without persistence would)",
                    ));
                }
            },
        })
    }

    /// A kill lasts until its restart: `restart_after`, 0 s by default; `duration` is refused.
    fn window(p: &Params<'_>) -> Result<Duration, SpecError> {
        restart_window(p, Self::NAME, "a kill lasts until its restart")
    }

    fn primitives(&self) -> Vec<&'static str> {
        vec!["kill"]
    }

    fn write(&self, t: &mut Table) {
        t.insert("target".into(), Value::String(self.target.name().into()));
        t.insert("data".into(), Value::String(data_name(self.data).into()));
    }

    async fn resolve<C: Faultable>(
        &self,
        scene: &Scene<'_, C>,
        rng: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        let nodes = scene.nodes(self.target, rng).await?;
        Ok((
            Killed {
                nodes: nodes.clone(),
                data: self.data,
            }
            .into(),
            nodes,
        ))
    }
}

impl Effect for Killed {
    type Kind = Kill;

    fn nodes(&self) -> Vec<String> {
        self.nodes.clone()
    }

    async fn start<C: Faultable>(
        &self,
        on: &C,
        _: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        on_each_node(&self.nodes, |n| on.kill(n)).await
    }

    async fn undo<C: Faultable>(&self, on: &C, ctx: &Ctx<'_>) -> Result<Ended, FaultError> {
        for n in &self.nodes {
            on.restart(n, self.data).await?;
        }
        // Started is not rejoined: the end is only `ok` once each node serves again.
        let timeout = ctx.rejoin_timeout;
        let mut ended = Ended::default();
        for n in &self.nodes {
            // A node a partition still cuts off may not serve until the heal, which waiting
            // here would hold up (the nemesis plays one step at a time): say so at once.
            let cut = on.cut_from(n);
            if !cut.is_empty() {
                ended.not_rejoined.push(format!(
                    "{n} was restarted inside a partition that cuts it off from {}: whether it \
                     serves its cluster was not waited for (it may not until the heal)",
                    cut.join(", ")
                ));
                continue;
            }
            match wait_until(timeout, || on.serving(n)).await {
                Ok(took) => ended.rejoined.push((n.clone(), took)),
                Err(why) => ended.not_rejoined.push(format!(
                    "{n} did not serve its cluster within {:.1} s of its restart: {why}",
                    timeout.as_secs_f64()
                )),
            }
        }
        Ok(ended)
    }
}

/// The window of a kind that lasts until a node's restart (`kill`, `promote`): its
/// `restart_after`, 0 s by default; `duration` is refused, naming `kind`, what it lasts until
/// (`lasts`) and the field to set instead.
pub(super) fn restart_window(
    p: &Params<'_>,
    kind: &str,
    lasts: &str,
) -> Result<Duration, SpecError> {
    if p.given("duration") {
        return Err(p.conflict(format!(
            "field '{}' does not apply to kind \"{}\": {lasts}, set 'restart_after' (how long \
             the node stays down; \"0s\", the default, restarts it at once)",
            p.field("duration"),
            kind
        )));
    }
    match p.text("restart_after") {
        None => Ok(Duration::ZERO),
        Some(t) => p.duration("restart_after", t, Duration::ZERO),
    }
}

/// A Redlock restart variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedlockRestart {
    /// Restart at once, empty.
    Empty,
    /// Restart empty once the longest TTL (and the spec's drift) has passed.
    Delayed,
}

impl RedlockRestart {
    /// The name of the shipped schedule.
    pub fn name(self) -> &'static str {
        match self {
            RedlockRestart::Empty => "redlock-restart-empty",
            RedlockRestart::Delayed => "redlock-restart-delayed",
        }
    }

    /// The kill fault on `nodes`, and how long they stay down before the restart, for locks
    /// whose TTL is at most `ttl`.
    pub fn plan(self, nodes: Vec<String>, ttl: Duration) -> (Fault, Duration) {
        let fault = Fault::Kill(Killed {
            nodes,
            data: DataOnRestart::Wipe,
        });
        let down = match self {
            RedlockRestart::Empty => Duration::ZERO,
            RedlockRestart::Delayed => ttl + ttl / 100 + Duration::from_millis(2),
        };
        (fault, down)
    }
}

impl fmt::Display for RedlockRestart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delayed_waits_past_the_ttl_and_the_drift() {
        let (f, down) =
            RedlockRestart::Delayed.plan(vec!["redlock2".into()], Duration::from_secs(10));
        // 10 s + 1 % (100 ms) + 2 ms.
        assert_eq!(down, Duration::from_millis(10_102));
        assert_eq!(
            f,
            Fault::Kill(Killed {
                nodes: vec!["redlock2".into()],
                data: DataOnRestart::Wipe
            })
        );
        let (_, now) = RedlockRestart::Empty.plan(vec!["redlock1".into()], Duration::from_secs(10));
        assert_eq!(now, Duration::ZERO);
        assert_eq!(RedlockRestart::Empty.to_string(), "redlock-restart-empty");
    }
}
