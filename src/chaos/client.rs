//! Which worker process a client pause stops: `holder` (one whose client holds a lock now, the
//! GC pause that matters) or `random`. Pausing and resuming are [`WorkerControl`]'s; the nemesis
//! knows the holders from the history.

use std::fmt;
use std::str::FromStr;

use rand::Rng;
use rand::seq::IndexedRandom;

use crate::runner::{WorkerControl, WorkerState};

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
    workers: &WorkerControl,
    rng: &mut R,
) -> Result<usize, PickError> {
    if workers.is_empty() {
        return Err(PickError::NoWorkers);
    }
    let running: Vec<usize> = (0..workers.len())
        .filter(|&i| workers.state(i) == Some(WorkerState::Running))
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

    /// Three workers running clients 0-1, 2-3, 4-5; the pids are never signalled here.
    fn three() -> WorkerControl {
        WorkerControl::stand_in(vec![vec![0, 1], vec![2, 3], vec![4, 5]])
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
        let none = WorkerControl::stand_in(vec![]);
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
