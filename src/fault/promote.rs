//! `promote`: an operator's failover, for the systems that have none of their own (PostgreSQL
//! streaming replication, MariaDB replication): SIGKILL the primary, then promote its replica
//! to take writes. After the fault's `restart_after` (its window) the old primary is started
//! again; it finds a primary among its peers and rejoins as that one's replica (its own data
//! thrown away, as `pg_basebackup` or a fresh GTID replica would), and the undo ends once it
//! serves again.
//!
//! What it shows: session locks (`pg_advisory_lock`, `GET_LOCK`) are neither replicated nor
//! recovered, so every lock held on the old primary is gone at once, and the promoted replica
//! grants them again while the old holders may not yet know.
//!
//! ```toml
//! [[faults]]
//! kind = "promote"
//! restart_after = "5s"   # how long the old primary stays down; 0s (default) restarts it at once
//! start = "10s"
//! ```

use std::time::Duration;

use rand::rngs::StdRng;
use toml::Table;

use super::target::Target;
use super::{Ctx, Effect, Ended, Fault, FaultError, Faultable, Kind, Param, Params, Scene};
use super::{Refusal, Started, clock::Ticker, wait_until};
use crate::cluster::DataOnRestart;
use crate::spec_error::SpecError;
use crate::system::FACTS;

/// Kill the primary and promote its replica.
#[derive(Debug, Clone, PartialEq)]
pub struct Promote;

/// Killed this primary and promoted a replica; the undo restarts the old primary as a replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promoted {
    /// The primary that was killed.
    pub old: String,
}

impl Kind for Promote {
    const NAME: &'static str = "promote";
    const PARAMETERS: &'static [Param] = &[Param::text("restart_after")];
    const WINDOW: &'static str = "restart_after";

    fn read(_: &Params<'_>) -> Result<Self, SpecError> {
        Ok(Promote)
    }

    /// A promotion lasts until the old primary's restart: `restart_after`, 0 s by default.
    fn window(p: &Params<'_>) -> Result<Duration, SpecError> {
        super::kill::restart_window(p, Self::NAME, "it lasts until the old primary's restart")
    }

    fn primitives(&self) -> Vec<&'static str> {
        vec!["promote"]
    }

    fn write(&self, _: &mut Table) {}

    fn refusal(&self) -> Option<Refusal> {
        Some(Refusal {
            kind: Self::NAME,
            systems: FACTS
                .iter()
                .filter(|f| !f.manual_failover)
                .map(|f| f.system)
                .collect(),
            why: "they elect or fail over by themselves (ZooKeeper, etcd, Redis with Sentinel) \
                  or have no replica (Redlock, Memcached): a promotion is an operator's step on \
                  postgres and mariadb only. Set systems = [\"postgres\", \"mariadb\"], or use \
                  kind = \"kill\" with target = \"leader\"",
        })
    }

    async fn resolve<C: Faultable>(
        &self,
        scene: &Scene<'_, C>,
        rng: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        let nodes = scene.nodes(Target::Leader, rng).await?;
        let old = nodes
            .first()
            .cloned()
            .ok_or_else(|| "no primary is seen now: nothing to fail over from".to_string())?;
        Ok((Promoted { old }.into(), nodes))
    }
}

impl Effect for Promoted {
    type Kind = Promote;

    fn nodes(&self) -> Vec<String> {
        vec![self.old.clone()]
    }

    async fn start<C: Faultable>(
        &self,
        on: &C,
        _: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        if let Err(e) = on.kill(&self.old).await {
            return (Err(e.into()), None);
        }
        let started = on.promote().await.map(|new| Started {
            effect: Some(format!("killed {}, promoted {new}", self.old)),
            ..Started::default()
        });
        (started.map_err(FaultError::from), None)
    }

    async fn undo<C: Faultable>(&self, on: &C, ctx: &Ctx<'_>) -> Result<Ended, FaultError> {
        // Kept data: the node finds a primary among its peers at start and rejoins it as a
        // replica, throwing its own data away (its timeline forked at the promotion).
        on.restart(&self.old, DataOnRestart::Keep).await?;
        let mut ended = Ended::default();
        match wait_until(ctx.rejoin_timeout, || on.serving(&self.old)).await {
            Ok(took) => ended.rejoined.push((self.old.clone(), took)),
            Err(why) => ended.not_rejoined.push(format!(
                "{} did not serve as a replica within {:.1} s of its restart: {why}",
                self.old,
                ctx.rejoin_timeout.as_secs_f64()
            )),
        }
        Ok(ended)
    }
}
