//! `slow`: latency between every client and every server for a while. The cell's clients
//! reach the servers through lockbench's own relays ([`crate::runner::relays`]); the fault
//! raises every relay's one-way delay to `latency` (plus up to `latency_jitter` per chunk), and its
//! undo puts back the workload's own `client_latency`. Real delay on real connections: every
//! request and reply, keep-alives, watches and Sentinel queries alike, waits in the relay. It
//! acts on the client links lockbench owns, so it runs on a target too and needs none of the
//! target's commands. Chaos Mesh's `NetworkChaos` delay is the equivalent inside a cluster.
//!
//! ```toml
//! [[faults]]
//! kind = "slow"
//! latency = "20ms"   # one way, each direction: a round trip gains twice it
//! latency_jitter = "5ms"   # optional, default none (`jitter` is the timing's)
//! start = "5s"
//! duration = "10s"
//! ```

use std::time::Duration;

use rand::rngs::StdRng;
use toml::{Table, Value};

use super::{Ctx, Effect, Ended, Fault, FaultError, Faultable, Kind, Param, Params, Scene};
use super::{Started, clock::Ticker};
use crate::latency::Delay;
use crate::spec_error::SpecError;

/// The most one-way latency a `slow` fault may add: past it every request times out, which a
/// partition already says.
pub const MAX_SLOW: Duration = Duration::from_secs(10);

/// The links between a cell's clients and its servers, which a `slow` fault slows: the cell's
/// latency relays. Implementations change the delay of every open and future connection.
pub trait ClientLinks: Send + Sync + std::fmt::Debug {
    /// Every link waits `delay` each way from now on.
    fn slow(&self, delay: Delay);
    /// Every link goes back to the cell's own delay (the workload's `client_latency`).
    fn restore(&self);
}

/// Latency on every client link for a while.
#[derive(Debug, Clone, PartialEq)]
pub struct Slow {
    /// One-way delay each direction, and its jitter.
    pub delay: Delay,
}

/// Slowed every client link to `delay`; the undo restores the cell's own delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slowed {
    /// The delay in effect.
    pub delay: Delay,
}

/// The effect's words, for its end event and the window's `effect`.
fn words(d: Delay) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    if d.jitter.is_zero() {
        format!("client links delayed {:.3} ms each way", ms(d.base))
    } else {
        format!(
            "client links delayed {:.3} ms (+ up to {:.3} ms) each way",
            ms(d.base),
            ms(d.jitter)
        )
    }
}

impl Kind for Slow {
    const NAME: &'static str = "slow";
    const PARAMETERS: &'static [Param] = &[Param::text("latency"), Param::text("latency_jitter")];

    fn read(p: &Params<'_>) -> Result<Self, SpecError> {
        let limit = humantime::format_duration(MAX_SLOW).to_string();
        // A duration field at least `min` and at most MAX_SLOW; `None` when absent.
        let field = |name: &str, min: Duration, lowest: &str| {
            let Some(text) = p.text(name) else {
                return Ok(None);
            };
            let d = p.duration(name, text, min)?;
            if d > MAX_SLOW {
                return Err(p.out_of_range(name, text, &format!("{lowest} to {limit}")));
            }
            Ok(Some(d))
        };
        let Some(base) = field("latency", Duration::from_micros(1), "1us")? else {
            return Err(p.missing(
                "latency",
                "say how much one-way delay every client link gets, e.g. latency = \"20ms\"",
            ));
        };
        let jitter = field("latency_jitter", Duration::ZERO, "0s")?.unwrap_or_default();
        Ok(Slow {
            delay: Delay { base, jitter },
        })
    }

    fn primitives(&self) -> Vec<&'static str> {
        // Lockbench's own relays, never the target's commands.
        Vec::new()
    }

    fn slows_clients(&self) -> bool {
        true
    }

    fn write(&self, t: &mut Table) {
        let text = |d: Duration| Value::String(humantime::format_duration(d).to_string());
        t.insert("latency".into(), text(self.delay.base));
        if !self.delay.jitter.is_zero() {
            t.insert("latency_jitter".into(), text(self.delay.jitter));
        }
    }

    async fn resolve<C: Faultable>(
        &self,
        _: &Scene<'_, C>,
        _: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        Ok((Slowed { delay: self.delay }.into(), Vec::new()))
    }
}

impl Effect for Slowed {
    type Kind = Slow;

    fn nodes(&self) -> Vec<String> {
        Vec::new()
    }

    async fn start<C: Faultable>(
        &self,
        _: &C,
        ctx: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        let r = match ctx.links {
            Some(links) => {
                links.slow(self.delay);
                Ok(Started {
                    effect: Some(words(self.delay)),
                    ..Started::default()
                })
            }
            None => Err(FaultError::NoLinks),
        };
        (r, None)
    }

    async fn undo<C: Faultable>(&self, _: &C, ctx: &Ctx<'_>) -> Result<Ended, FaultError> {
        // Without links its start failed for that reason: nothing was slowed.
        if let Some(links) = ctx.links {
            links.restore();
        }
        Ok(Ended::default())
    }
}
