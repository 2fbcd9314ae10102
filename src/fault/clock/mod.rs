//! `clock`: skew servers' clocks for the fault's `duration`: one jump forward by `by`, or a
//! clock running fast at `rate`. **Modelled** ([`model`]): no server clock is changed; on each
//! targeted Redis master every TTL under the cell's key prefix is cut by the jump, and every
//! queue-entry deadline kept in server time brought as much closer ([`MODEL`] is what every
//! report repeats). Its undo stops a fast clock's ticks; nothing is set back.
//! Refused on ZooKeeper and etcd, whose sessions and leases run on monotonic clocks.
//!
//! ```toml
//! [[faults]]
//! kind = "clock"
//! target = "leader"   # one (default), minority, majority, leader, all
//! mode = "jump"       # jump (default, with by) or fast (with rate)
//! by = "30s"
//! start = "5s"
//! duration = "5s"
//! ```

pub mod model;

use std::time::Duration;

use rand::rngs::StdRng;
use toml::{Table, Value};

pub use model::{
    ClockAccess, ClockEffect, ClockError, Cut, Realism, Skew, Ticker, TickerTotals, prefix_pattern,
};

use super::target::Target::{self, All, Leader, Majority, Minority, One};
use super::{Ctx, Effect, Ended, Fault, FaultError, Faultable, Kind, Param, Params, Refusal};
use super::{Scene, Started};
use crate::spec_error::SpecError;
use crate::system::{FACTS, LeaseClock, System};

/// What the clock fault is, in one line every report repeats: it is modelled.
pub const MODEL: &str = "modelled: no server clock is changed; on each targeted Redis master every \
TTL under the cell's key prefix is cut by the jump, keys with less left are deleted, and every \
queue-entry deadline the recipes' scripts keep in server time is brought as much closer (a fast \
clock repeats this every tick); the end only stops the ticks, nothing is set back";

/// How often a fast clock jumps: its rate `r` becomes a jump of `(r - 1) × FAST_TICK` every
/// `FAST_TICK`.
pub const FAST_TICK: Duration = Duration::from_millis(250);

const MIN_JUMP: Duration = Duration::from_millis(1);
const MAX_RATE: f64 = 1000.0;

/// Skew one server's clock (Redis and Redlock expire keys by wall clock), modelled.
#[derive(Debug, Clone, PartialEq)]
pub struct Clock {
    /// `one`, `minority`, `majority`, `leader` or `all`.
    pub target: Target,
    /// How the clock goes wrong.
    pub skew: ClockSkew,
}

/// How a clock fault skews a server's clock, as the schedule file says it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockSkew {
    /// Jump forward by this much at once (`mode = "jump"`, `by`).
    Jump {
        /// The jump.
        by: Duration,
    },
    /// Run fast at this rate (`mode = "fast"`, `rate`; 2.0 is twice as fast).
    Fast {
        /// Clock seconds per real second, above 1.
        rate: f64,
    },
}

impl ClockSkew {
    /// The skew as the model runs it: one jump, or a jump every [`FAST_TICK`].
    pub fn model(self) -> Skew {
        match self {
            ClockSkew::Jump { by } => Skew::Jump(by),
            ClockSkew::Fast { rate } => Skew::Fast {
                every: FAST_TICK,
                jump: FAST_TICK.mul_f64((rate - 1.0).max(0.0)),
            },
        }
    }
}

/// Moved these servers' clocks forward (modelled: TTLs cut); the undo stops a fast clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skewed {
    /// The servers whose clocks move.
    pub nodes: Vec<String>,
    /// One jump, or a clock running fast.
    pub skew: Skew,
    /// The cell's key prefix: only keys under it are touched.
    pub prefix: String,
    /// [`Realism::Modelled`]; a real clock is refused with [`FaultError::RealClock`].
    pub realism: Realism,
}

/// How a clock fault reaches a server of `system` at `endpoint`, from what times its leases
/// ([`crate::system::Facts::lease_clock`]): Redis and Redlock expire keys by wall clock;
/// ZooKeeper sessions and etcd leases run on monotonic time.
pub fn clock_access(system: System, endpoint: String) -> ClockAccess {
    match system.facts().lease_clock {
        LeaseClock::Monotonic => ClockAccess::Monotonic,
        LeaseClock::RedisTtl => ClockAccess::Redis { endpoint },
    }
}

impl Kind for Clock {
    const NAME: &'static str = "clock";
    const PARAMETERS: &'static [Param] = &[
        Param::text("target"),
        Param::text("mode"),
        Param::text("by"),
        Param::number("rate"),
    ];
    const REALISM: Realism = Realism::Modelled;

    fn read(p: &Params<'_>) -> Result<Self, SpecError> {
        Ok(Clock {
            // A majority of Redlock's masters jumping at once is what breaks it.
            target: p.target(&[One, Minority, Majority, Leader, All], One)?,
            skew: skew(p)?,
        })
    }

    fn primitives(&self) -> Vec<&'static str> {
        vec!["clock"]
    }

    fn write(&self, t: &mut Table) {
        t.insert("target".into(), Value::String(self.target.name().into()));
        match self.skew {
            ClockSkew::Jump { by } => {
                t.insert("mode".into(), Value::String("jump".into()));
                let by = humantime::format_duration(by).to_string();
                t.insert("by".into(), Value::String(by));
            }
            ClockSkew::Fast { rate } => {
                t.insert("mode".into(), Value::String("fast".into()));
                t.insert("rate".into(), Value::Float(rate));
            }
        }
    }

    fn refusal(&self) -> Option<Refusal> {
        Some(Refusal {
            kind: Self::NAME,
            // Where the model cannot reach: the systems whose leases run on monotonic time.
            systems: FACTS
                .iter()
                .map(|f| f.system)
                .filter(|&s| clock_access(s, String::new()) == ClockAccess::Monotonic)
                .collect(),
            why: "ZooKeeper sessions and etcd leases are timed on monotonic clocks, which a \
                  wall-clock jump does not move (the clock fault is modelled on Redis by cutting \
                  TTLs). Set systems = [\"redis\", \"redlock\"], or move the clock fault to a \
                  schedule of its own",
        })
    }

    async fn resolve<C: Faultable>(
        &self,
        scene: &Scene<'_, C>,
        rng: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        let nodes = scene.nodes(self.target, rng).await?;
        let fault = Skewed {
            nodes: nodes.clone(),
            skew: self.skew.model(),
            prefix: scene.prefix.to_string(),
            realism: Realism::Modelled,
        };
        Ok((fault.into(), nodes))
    }
}

fn skew(p: &Params<'_>) -> Result<ClockSkew, SpecError> {
    match p.text("mode").map(str::trim) {
        None | Some("jump") => {
            if p.given("rate") {
                return Err(p.conflict(format!(
                    "field '{}' applies only to mode = \"fast\": a jump moves the clock by 'by'",
                    p.field("rate")
                )));
            }
            let by = p.text("by").ok_or_else(|| {
                p.missing(
                    "by",
                    "a clock jump needs its size, e.g. by = \"30s\" (longer than the lease TTL \
                     expires every lock key on that server)",
                )
            })?;
            Ok(ClockSkew::Jump {
                by: p.duration("by", by, MIN_JUMP)?,
            })
        }
        Some("fast") => {
            if p.given("by") {
                return Err(p.conflict(format!(
                    "field '{}' applies only to mode = \"jump\": a fast clock runs at 'rate'",
                    p.field("by")
                )));
            }
            let rate = p.number("rate").ok_or_else(|| {
                p.missing(
                    "rate",
                    "a fast clock needs its rate, e.g. rate = 2.0 (twice as fast)",
                )
            })?;
            if !(rate > 1.0 && rate <= MAX_RATE) {
                return Err(p.out_of_range("rate", rate, &format!("above 1 up to {MAX_RATE}")));
            }
            Ok(ClockSkew::Fast { rate })
        }
        Some(other) => Err(p.invalid(
            "mode",
            format!("\"{other}\""),
            "valid modes are jump (forward by 'by' at once, the default), fast (running at 'rate')",
        )),
    }
}

/// What the start did, in words: the model, then each node's effect (`partial: ` first when a
/// node refused while another took the cut).
fn describe(started: &Started) -> String {
    let nodes: Vec<String> = started.clock.iter().map(|(n, c)| c.describe(n)).collect();
    format!(
        "{}{MODEL}; {}",
        if started.partial() { "partial: " } else { "" },
        nodes.join("; ")
    )
}

impl Effect for Skewed {
    type Kind = Clock;

    fn nodes(&self) -> Vec<String> {
        self.nodes.clone()
    }

    fn realism(&self) -> Realism {
        self.realism
    }

    async fn start<C: Faultable>(
        &self,
        on: &C,
        ctx: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        let mut started = Started::default();
        let mut ticker = None;
        let r: Result<(), FaultError> = async {
            if self.realism != Realism::Modelled {
                return Err(FaultError::RealClock);
            }
            prefix_pattern(&self.prefix)?;
            let mut endpoints = Vec::new();
            // Each node on its own: a replica that refuses the cut leaves the others' cuts in
            // effect, and the start is partial, not failed.
            let mut first_refusal = None;
            for n in &self.nodes {
                match on.clock(n)? {
                    ClockAccess::Monotonic => {
                        started.clock.push((n.clone(), ClockEffect::Monotonic))
                    }
                    ClockAccess::Redis { endpoint } => {
                        match model::jump(&endpoint, &self.prefix, self.skew.jump()).await {
                            Ok(cut) => {
                                started.clock.push((n.clone(), ClockEffect::Modelled(cut)));
                                endpoints.push(endpoint);
                            }
                            Err(e) => {
                                let text = e.to_string();
                                started
                                    .clock
                                    .push((n.clone(), ClockEffect::Refused { error: text }));
                                first_refusal.get_or_insert(e);
                            }
                        }
                    }
                }
            }
            // Nothing took: the fault did not start.
            if let Some(e) = first_refusal
                && started
                    .clock
                    .iter()
                    .all(|(_, c)| matches!(c, ClockEffect::Refused { .. }))
            {
                return Err(e.into());
            }
            if let Skew::Fast { every, jump } = self.skew
                && !endpoints.is_empty()
            {
                ticker = Some(Ticker::spawn(
                    endpoints,
                    self.prefix.clone(),
                    every,
                    jump,
                    ctx.ticks.clone(),
                ));
            }
            Ok(())
        }
        .await;
        if !started.clock.is_empty() {
            started.effect = Some(describe(&started));
        }
        (r.map(|()| started), ticker)
    }

    /// A jumped clock is not set back: the keys it expired stay expired, as on a real server;
    /// stopping the ticker (the books do, for every fault) is all a fast clock needs.
    async fn undo<C: Faultable>(&self, _: &C, _: &Ctx<'_>) -> Result<Ended, FaultError> {
        Ok(Ended::default())
    }
}
