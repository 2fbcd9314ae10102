//! `pause-client`: stop a client's whole worker process (SIGSTOP: keep-alives and watchdogs
//! included) for the fault's `duration`, then continue it (SIGCONT): the GC pause. Needs clients
//! running as worker processes. Which worker: `holder` (one whose client holds a lock now, the
//! GC pause that matters; the nemesis waits up to [`crate::nemesis::HOLDER_WAIT`] for one, and
//! checks again right before the SIGSTOP) or `random`. Pausing and resuming are
//! [`WorkerProcesses`]' (the runner's worker control); the nemesis knows the holders from the
//! history.
//!
//! ```toml
//! [[faults]]
//! kind = "pause-client"
//! target = "holder"   # random (default) or holder
//! start = "3s"
//! duration = "15s"
//! ```

use std::fmt;
use std::str::FromStr;

use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use toml::{Table, Value};

use super::{Ctx, Effect, Ended, Fault, FaultError, Faultable, Kind, Param, Params, Scene};
use super::{Started, clock::Ticker};
use crate::spec_error::SpecError;

/// The cell's worker processes as a client pause stops and continues them. The runner's worker
/// control implements it, so neither the fault kinds nor the nemesis need anything from the
/// runner.
pub trait WorkerProcesses: Send + Sync + fmt::Debug {
    /// How many worker processes the cell runs.
    fn count(&self) -> usize;
    /// Whether worker `index` runs now (neither paused by a fault nor exited).
    fn running(&self, index: usize) -> bool;
    /// The clients worker `index` runs (empty for an index out of range).
    fn clients(&self, index: usize) -> &[u32];
    /// Stops worker `index` as a whole (SIGSTOP); `Err` says why it could not.
    fn pause(&self, index: usize) -> Result<(), String>;
    /// Lets worker `index` go on (SIGCONT); a worker that has exited has nothing left to
    /// resume, which is no error. `Err` says why it could not.
    fn resume(&self, index: usize) -> Result<(), String>;
}

/// Stop a client's whole worker process, then continue it.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseClient {
    /// Which client.
    pub target: ClientTarget,
}

/// Stopped these worker processes (SIGSTOP); the undo lets them go on (SIGCONT).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausedClients {
    /// Worker indexes, as [`WorkerProcesses`] numbers them.
    pub workers: Vec<usize>,
}

impl Kind for PauseClient {
    const NAME: &'static str = "pause-client";
    const PARAMETERS: &'static [Param] = &[Param::text("target")];

    fn read(p: &Params<'_>) -> Result<Self, SpecError> {
        Ok(PauseClient {
            target: match p.text("target").map(str::trim) {
                None | Some("random") => ClientTarget::Random,
                Some("holder") => ClientTarget::Holder,
                Some(other) => {
                    return Err(p.invalid(
                        "target",
                        format!("\"{other}\""),
                        "valid targets of kind \"pause-client\" are holder (a client holding a \
                         lock at that moment), random",
                    ));
                }
            },
        })
    }

    fn primitives(&self) -> Vec<&'static str> {
        // Lockbench stops its own worker processes: nothing on the servers.
        Vec::new()
    }

    fn write(&self, t: &mut Table) {
        t.insert("target".into(), Value::String(self.target.name().into()));
    }

    fn pauses_clients(&self) -> bool {
        true
    }

    fn waits_for_holder(&self) -> bool {
        self.target == ClientTarget::Holder
    }

    async fn resolve<C: Faultable>(
        &self,
        scene: &Scene<'_, C>,
        rng: &mut StdRng,
    ) -> Result<(Fault, Vec<String>), String> {
        let w = scene
            .workers
            .ok_or_else(|| PickError::NoWorkers.to_string())?;
        let i = pick_worker(self.target, scene.holders, w, rng).map_err(|e| e.to_string())?;
        let mut targets = vec![format!("worker{i}")];
        targets.extend(w.clients(i).iter().map(|c| format!("client{c}")));
        Ok((PausedClients { workers: vec![i] }.into(), targets))
    }
}

impl Effect for PausedClients {
    type Kind = PauseClient;

    fn nodes(&self) -> Vec<String> {
        Vec::new()
    }

    fn workers(&self) -> &[usize] {
        &self.workers
    }

    async fn start<C: Faultable>(
        &self,
        _: &C,
        ctx: &Ctx<'_>,
    ) -> (Result<Started, FaultError>, Option<Ticker>) {
        let r = (|| {
            let control = ctx.workers.ok_or(FaultError::NoWorkers)?;
            for &w in &self.workers {
                control.pause(w).map_err(FaultError::Worker)?;
            }
            Ok(Started::default())
        })();
        (r, None)
    }

    async fn undo<C: Faultable>(&self, _: &C, ctx: &Ctx<'_>) -> Result<Ended, FaultError> {
        let Some(control) = ctx.workers else {
            return Ok(Ended::default()); // its start failed for this reason: nothing was paused
        };
        for &w in &self.workers {
            control.resume(w).map_err(FaultError::Worker)?;
        }
        Ok(Ended::default())
    }
}

/// The worker a client pause targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientTarget {
    /// A worker running a client that holds a lock at this moment.
    Holder,
    /// Any running worker.
    Random,
}

/// Every client target, as error messages list them.
pub const CLIENT_TARGETS: [ClientTarget; 2] = [ClientTarget::Holder, ClientTarget::Random];

impl ClientTarget {
    /// The name used in chaos files.
    pub fn name(self) -> &'static str {
        match self {
            ClientTarget::Holder => "holder",
            ClientTarget::Random => "random",
        }
    }
}

impl fmt::Display for ClientTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientTarget {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CLIENT_TARGETS
            .into_iter()
            .find(|t| t.name() == s.trim())
            .ok_or_else(|| format!("unknown client target '{s}': valid targets are holder, random"))
    }
}

/// No worker fits the target right now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PickError {
    /// The cell runs no worker process (clients in-process cannot be paused alone).
    #[error(
        "client pause: the cell runs no worker processes; run its clients as `lockbench worker` processes"
    )]
    NoWorkers,
    /// Every worker is paused or has exited.
    #[error("client pause: no worker is running (all paused or exited)")]
    NoneRunning,
    /// `holder`, but no running worker's client holds a lock now.
    #[error(
        "client pause 'holder': no running worker's client holds a lock now (holders: {holders:?})"
    )]
    NoHolder {
        /// The clients said to hold a lock.
        holders: Vec<u32>,
    },
}

/// The index of the worker to pause for `target`, among the running workers of `workers`;
/// `holders` are the clients that hold a lock now. Drawn with `rng` among the candidates in
/// index order, so a seeded schedule picks the same worker for the same holders again.
pub fn pick_worker<R: Rng + ?Sized>(
    target: ClientTarget,
    holders: &[u32],
    workers: &dyn WorkerProcesses,
    rng: &mut R,
) -> Result<usize, PickError> {
    if workers.count() == 0 {
        return Err(PickError::NoWorkers);
    }
    let running: Vec<usize> = (0..workers.count())
        .filter(|&i| workers.running(i))
        .collect();
    if running.is_empty() {
        return Err(PickError::NoneRunning);
    }
    let candidates: Vec<usize> = match target {
        ClientTarget::Random => running,
        ClientTarget::Holder => running
            .into_iter()
            .filter(|&i| workers.clients(i).iter().any(|c| holders.contains(c)))
            .collect(),
    };
    candidates
        .choose(rng)
        .copied()
        .ok_or_else(|| PickError::NoHolder {
            holders: holders.to_vec(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use std::sync::Mutex;

    /// Workers that run the given clients and are never signalled: pausing only marks them.
    #[derive(Debug)]
    struct Stand {
        clients: Vec<Vec<u32>>,
        paused: Mutex<Vec<usize>>,
    }

    impl Stand {
        fn new(clients: Vec<Vec<u32>>) -> Stand {
            Stand {
                clients,
                paused: Mutex::new(Vec::new()),
            }
        }
        fn mark_paused_for_test(&self, i: usize) {
            self.paused.lock().unwrap().push(i);
        }
    }

    impl WorkerProcesses for Stand {
        fn count(&self) -> usize {
            self.clients.len()
        }
        fn running(&self, i: usize) -> bool {
            i < self.clients.len() && !self.paused.lock().unwrap().contains(&i)
        }
        fn clients(&self, i: usize) -> &[u32] {
            self.clients.get(i).map_or(&[], |c| c)
        }
        fn pause(&self, i: usize) -> Result<(), String> {
            self.mark_paused_for_test(i);
            Ok(())
        }
        fn resume(&self, i: usize) -> Result<(), String> {
            self.paused.lock().unwrap().retain(|&p| p != i);
            Ok(())
        }
    }

    /// Three workers running clients 0-1, 2-3, 4-5.
    fn three() -> Stand {
        Stand::new(vec![vec![0, 1], vec![2, 3], vec![4, 5]])
    }

    #[test]
    fn holder_picks_the_worker_of_a_holding_client() {
        let w = three();
        let mut rng = StdRng::seed_from_u64(1);
        for seed in 0..10 {
            let mut rng = StdRng::seed_from_u64(seed);
            assert_eq!(pick_worker(ClientTarget::Holder, &[3], &w, &mut rng), Ok(1));
        }
        // Holders in workers 0 and 2: either, never 1.
        let picks: std::collections::BTreeSet<usize> = (0..20)
            .map(|s| {
                pick_worker(
                    ClientTarget::Holder,
                    &[1, 5],
                    &w,
                    &mut StdRng::seed_from_u64(s),
                )
                .unwrap()
            })
            .collect();
        assert_eq!(picks, [0, 2].into());
        assert_eq!(
            pick_worker(ClientTarget::Holder, &[9], &w, &mut rng),
            Err(PickError::NoHolder { holders: vec![9] })
        );
        assert!(pick_worker(ClientTarget::Holder, &[], &w, &mut rng).is_err());
    }

    #[test]
    fn random_is_seeded_and_skips_paused_workers() {
        let w = three();
        let pick =
            |s| pick_worker(ClientTarget::Random, &[], &w, &mut StdRng::seed_from_u64(s)).unwrap();
        assert_eq!(pick(4), pick(4));
        let seen: std::collections::BTreeSet<usize> = (0..30).map(pick).collect();
        assert_eq!(seen, [0, 1, 2].into(), "every worker can be drawn");
        w.mark_paused_for_test(1);
        let mut rng = StdRng::seed_from_u64(0);
        for _ in 0..20 {
            assert_ne!(pick_worker(ClientTarget::Random, &[], &w, &mut rng), Ok(1));
        }
        assert_eq!(
            pick_worker(ClientTarget::Holder, &[2], &w, &mut rng),
            Err(PickError::NoHolder { holders: vec![2] }),
            "the holder's worker is already paused"
        );
        w.mark_paused_for_test(0);
        w.mark_paused_for_test(2);
        assert_eq!(
            pick_worker(ClientTarget::Random, &[], &w, &mut rng),
            Err(PickError::NoneRunning)
        );
        let none = Stand::new(vec![]);
        assert_eq!(
            pick_worker(ClientTarget::Random, &[], &none, &mut rng),
            Err(PickError::NoWorkers)
        );
        assert_eq!("holder".parse::<ClientTarget>(), Ok(ClientTarget::Holder));
        assert!(
            "leader"
                .parse::<ClientTarget>()
                .unwrap_err()
                .contains("holder, random")
        );
    }
}
