//! Which nodes a fault hits: a target resolved against the cluster's servers and its leader at
//! the moment the fault starts (Jepsen's `one`, `minority`, `majority`, `primaries`, `all`).

use std::fmt;
use std::str::FromStr;

use rand::Rng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

/// The nodes a fault acts on, chosen when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// One server at random.
    One,
    /// Fewer than half the servers (at least one), at random.
    Minority,
    /// More than half the servers, at random.
    Majority,
    /// The leader (ZooKeeper leader, etcd leader, the Redis master; a Redlock master).
    Leader,
    /// Every server.
    All,
}

/// Every target, as error messages list them.
pub const TARGETS: [Target; 5] = [
    Target::One,
    Target::Minority,
    Target::Majority,
    Target::Leader,
    Target::All,
];

impl Target {
    /// The name used in chaos files.
    pub fn name(self) -> &'static str {
        match self {
            Target::One => "one",
            Target::Minority => "minority",
            Target::Majority => "majority",
            Target::Leader => "leader",
            Target::All => "all",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TARGETS
            .into_iter()
            .find(|t| t.name() == s.trim())
            .ok_or_else(|| {
                let valid: Vec<&str> = TARGETS.iter().map(|t| t.name()).collect();
                format!(
                    "unknown target '{s}': valid targets are {}",
                    valid.join(", ")
                )
            })
    }
}

/// A target that names no node in this cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The cluster has no servers.
    #[error("the cluster has no servers to target")]
    NoServers,
    /// `leader` on a cluster that has none right now (an election, a split).
    #[error(
        "target 'leader': the cluster has no leader right now (choose 'one' or wait for an election)"
    )]
    NoLeader,
}

/// The nodes `target` names among `servers`, given the current `leader`, chosen with `rng`
/// (so a seeded schedule picks the same nodes again). Returned in `servers` order.
pub fn resolve<R: Rng + ?Sized>(
    target: Target,
    servers: &[String],
    leader: Option<&str>,
    rng: &mut R,
) -> Result<Vec<String>, TargetError> {
    if servers.is_empty() {
        return Err(TargetError::NoServers);
    }
    let n = servers.len();
    let count = match target {
        Target::One => 1,
        Target::Minority => (n.saturating_sub(1) / 2).max(1),
        Target::Majority => n / 2 + 1,
        Target::All => n,
        Target::Leader => {
            let l = leader
                .filter(|l| servers.iter().any(|s| s == l))
                .ok_or(TargetError::NoLeader)?;
            return Ok(vec![l.to_string()]);
        }
    };
    let mut picked: Vec<&String> = servers.iter().collect();
    picked.shuffle(rng);
    picked.truncate(count);
    Ok(servers
        .iter()
        .filter(|s| picked.contains(s))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn servers(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn sizes_follow_the_names() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for (n, minority, majority) in [(1, 1, 1), (3, 1, 2), (4, 1, 3), (5, 2, 3), (7, 3, 4)] {
            let s = servers(n);
            let mut len = |t| resolve(t, &s, None, &mut rng).unwrap().len();
            assert_eq!(len(Target::One), 1);
            assert_eq!(len(Target::Minority), minority, "minority of {n}");
            assert_eq!(len(Target::Majority), majority, "majority of {n}");
            assert_eq!(len(Target::All), n);
        }
    }

    #[test]
    fn the_leader_is_the_leader_and_a_seed_repeats_its_picks() {
        let s = servers(5);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        assert_eq!(
            resolve(Target::Leader, &s, Some("n4"), &mut rng).unwrap(),
            ["n4"]
        );
        assert_eq!(
            resolve(Target::Leader, &s, None, &mut rng),
            Err(TargetError::NoLeader)
        );
        let pick = |seed| {
            let mut r = rand::rngs::StdRng::seed_from_u64(seed);
            resolve(Target::Majority, &s, None, &mut r).unwrap()
        };
        assert_eq!(pick(3), pick(3));
        assert!(
            (0..20).any(|seed| pick(seed) != pick(3)),
            "picks vary with the seed"
        );
        assert!(
            "leaders"
                .parse::<Target>()
                .unwrap_err()
                .contains("one, minority, majority, leader, all")
        );
    }
}
