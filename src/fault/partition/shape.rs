//! Jepsen's partition shapes as pure functions from the servers (and the leader) to a
//! [`Grudge`], drawn with a seeded rng so a schedule cuts the same links again:
//!
//! - `halves`: random halves, the smaller first; on an even-sized cluster the even split, where
//!   no side has a majority;
//! - `isolate-leader`: the leader alone against the rest;
//! - `bridge`: random halves, the first node of the second half keeping its links to both, so
//!   each side plus the bridge may form a majority;
//! - `majorities-ring`: every node sees a majority and no two see the same one. Not disjoint
//!   groups: nodes sit on a (shuffled) ring and keep the links to the `k` nearest on each side,
//!   `k` the least with `2k + 1` at least a majority; three nodes, where that ring is complete,
//!   cut one link instead (a line: `{a,b}`, `{a,b,c}`, `{b,c}`). Jepsen's variant drops inbound
//!   traffic only; cuts here are links, so the ring is kept symmetric.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use rand::Rng;
use rand::seq::SliceRandom;

use super::Grudge;
use crate::cluster::ClusterError;

/// A named partition shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Random halves (the even split on an even-sized cluster).
    Halves,
    /// The leader alone on the minority side.
    IsolateLeader,
    /// Two halves joined through one node that sees both.
    Bridge,
    /// Every node sees a majority, no two the same one.
    MajoritiesRing,
}

/// Every shape, as error messages list them.
pub const SHAPES: [Shape; 4] = [
    Shape::Halves,
    Shape::IsolateLeader,
    Shape::Bridge,
    Shape::MajoritiesRing,
];

impl Shape {
    /// The name used in chaos files.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Halves => "halves",
            Shape::IsolateLeader => "isolate-leader",
            Shape::Bridge => "bridge",
            Shape::MajoritiesRing => "majorities-ring",
        }
    }

    /// The grudge of this shape over `servers`, given the current `leader` (only
    /// `isolate-leader` needs one), drawn with `rng`.
    pub fn grudge<R: Rng + ?Sized>(
        self,
        servers: &[String],
        leader: Option<&str>,
        rng: &mut R,
    ) -> Result<Grudge, ClusterError> {
        match self {
            Shape::Halves => halves(servers, rng),
            Shape::IsolateLeader => {
                let l = leader.ok_or_else(|| {
                    ClusterError::BadPartition(
                        "isolate-leader: the cluster has no leader right now (use halves, or \
                         wait for an election)"
                            .into(),
                    )
                })?;
                isolate_leader(servers, l)
            }
            Shape::Bridge => bridge(servers, rng),
            Shape::MajoritiesRing => majorities_ring(servers, rng),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SHAPES
            .into_iter()
            .find(|t| t.name() == s.trim())
            .ok_or_else(|| {
                let valid: Vec<&str> = SHAPES.iter().map(|t| t.name()).collect();
                format!(
                    "unknown partition shape '{s}': valid shapes are {}",
                    valid.join(", ")
                )
            })
    }
}

fn known(servers: &[String]) -> BTreeSet<String> {
    servers.iter().cloned().collect()
}

fn at_least(servers: &[String], n: usize, shape: &str) -> Result<(), ClusterError> {
    if servers.len() < n {
        return Err(ClusterError::BadPartition(format!(
            "{shape} needs at least {n} servers, the cluster has {}",
            servers.len()
        )));
    }
    Ok(())
}

/// The servers shuffled and split in two, the smaller half first (Jepsen's bisect).
fn bisect<R: Rng + ?Sized>(servers: &[String], rng: &mut R) -> (Vec<String>, Vec<String>) {
    let mut v = servers.to_vec();
    v.shuffle(rng);
    let second = v.split_off(v.len() / 2);
    (v, second)
}

/// Random halves: `n/2` nodes against the other `n - n/2`.
pub fn halves<R: Rng + ?Sized>(servers: &[String], rng: &mut R) -> Result<Grudge, ClusterError> {
    at_least(servers, 2, "halves")?;
    let (a, b) = bisect(servers, rng);
    Grudge::from_groups(&[a, b], &known(servers))
}

/// `leader` alone against every other server.
pub fn isolate_leader(servers: &[String], leader: &str) -> Result<Grudge, ClusterError> {
    at_least(servers, 2, "isolate-leader")?;
    let rest: Vec<String> = servers.iter().filter(|s| *s != leader).cloned().collect();
    Grudge::from_groups(&[vec![leader.to_string()], rest], &known(servers))
}

/// Random halves joined through the first node of the second half, which keeps every link.
pub fn bridge<R: Rng + ?Sized>(servers: &[String], rng: &mut R) -> Result<Grudge, ClusterError> {
    at_least(servers, 3, "bridge")?;
    let (a, mut b) = bisect(servers, rng);
    b.remove(0);
    Grudge::from_groups(&[a, b], &known(servers))
}

/// Every node sees a majority (itself included), and no two nodes the same set.
pub fn majorities_ring<R: Rng + ?Sized>(
    servers: &[String],
    rng: &mut R,
) -> Result<Grudge, ClusterError> {
    at_least(servers, 3, "majorities-ring")?;
    let mut ring = servers.to_vec();
    ring.shuffle(rng);
    let n = ring.len();
    let mut cuts = Vec::new();
    if n == 3 {
        cuts.push((ring[0].clone(), ring[2].clone()));
    } else {
        let majority = n / 2 + 1;
        let k = majority / 2; // the least k with 2k + 1 >= majority
        for i in 0..n {
            for j in i + 1..n {
                let d = (j - i).min(n - (j - i));
                if d > k {
                    cuts.push((ring[i].clone(), ring[j].clone()));
                }
            }
        }
    }
    Grudge::from_cuts(&cuts, &known(servers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn servers(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    /// How many nodes each node sees (itself included), sorted.
    fn view_sizes(g: &Grudge, all: &[String]) -> Vec<usize> {
        let mut v: Vec<usize> = all.iter().map(|n| g.sees(n, all).len()).collect();
        v.sort();
        v
    }

    #[test]
    fn halves_split_evenly_when_they_can() {
        // n/2 against n - n/2: each node sees its own side.
        for (n, want) in [
            (3, vec![1, 2, 2]),
            (4, vec![2, 2, 2, 2]), // no side has the 3 a majority of 4 needs
            (5, vec![2, 2, 3, 3, 3]),
            (7, vec![3, 3, 3, 4, 4, 4, 4]),
        ] {
            let all = servers(n);
            for seed in 0..5 {
                let g = halves(&all, &mut StdRng::seed_from_u64(seed)).unwrap();
                assert_eq!(view_sizes(&g, &all), want, "halves of {n}, seed {seed}");
                // Sides are cliques: whoever a node sees, sees the same set.
                for a in &all {
                    for b in g.sees(a, &all) {
                        assert_eq!(g.sees(a, &all), g.sees(&b, &all));
                    }
                }
            }
        }
        let all = servers(5);
        let pick = |s| halves(&all, &mut StdRng::seed_from_u64(s)).unwrap();
        assert_eq!(pick(9), pick(9), "a seed repeats its split");
        assert!(
            (0..20).any(|s| pick(s) != pick(9)),
            "splits vary with the seed"
        );
    }

    #[test]
    fn isolate_leader_leaves_the_leader_alone() {
        for n in [3, 4, 5, 7] {
            let all = servers(n);
            let g = isolate_leader(&all, "n2").unwrap();
            assert_eq!(g.sees("n2", &all), BTreeSet::from(["n2".to_string()]));
            let mut want = vec![n - 1; n - 1];
            want.insert(0, 1);
            assert_eq!(view_sizes(&g, &all), want, "isolate-leader of {n}");
        }
        let e = Shape::IsolateLeader
            .grudge(&servers(3), None, &mut StdRng::seed_from_u64(1))
            .unwrap_err();
        assert!(e.to_string().contains("no leader"), "{e}");
        assert!(isolate_leader(&servers(3), "x").is_err(), "unknown leader");
    }

    #[test]
    fn bridge_sees_both_halves() {
        // Halves of n/2 and n - n/2; the bridge is taken from the second: it sees all n, the
        // first half sees itself plus the bridge, the rest of the second half sees its half.
        for (n, want) in [
            (3, vec![2, 2, 3]),             // {a} b {c}
            (4, vec![2, 3, 3, 4]),          // {a,b} c {d}: the first half plus c is a majority
            (5, vec![3, 3, 3, 3, 5]),       // {a,b} c {d,e}: both sides with c are majorities
            (7, vec![4, 4, 4, 4, 4, 4, 7]), // {a,b,c} d {e,f,g}: 4 of 7 each, two majorities
        ] {
            let all = servers(n);
            let g = bridge(&all, &mut StdRng::seed_from_u64(3)).unwrap();
            assert_eq!(view_sizes(&g, &all), want, "bridge of {n}");
            let bridges: Vec<&String> = all.iter().filter(|a| g.sees(a, &all).len() == n).collect();
            assert_eq!(bridges.len(), 1, "one bridge in {n}");
            assert!(!g.blocked().contains_key(bridges[0]));
        }
        assert!(bridge(&servers(2), &mut StdRng::seed_from_u64(1)).is_err());
    }

    #[test]
    fn majorities_ring_gives_each_node_its_own_majority() {
        // Majorities: 2 of 3, 3 of 4, 3 of 5, 4 of 7. Views: 3 a line (2, 3, 2); 4 and 5 a ring
        // with one neighbour each side (3); 7 two each side (5, as 7 nodes cannot all have 3
        // links: 7 × 3 is odd).
        for (n, want) in [
            (3, vec![2, 2, 3]),
            (4, vec![3, 3, 3, 3]),
            (5, vec![3, 3, 3, 3, 3]),
            (7, vec![5, 5, 5, 5, 5, 5, 5]),
        ] {
            let all = servers(n);
            for seed in 0..5 {
                let g = majorities_ring(&all, &mut StdRng::seed_from_u64(seed)).unwrap();
                assert_eq!(view_sizes(&g, &all), want, "ring of {n}, seed {seed}");
                let views: BTreeSet<BTreeSet<String>> =
                    all.iter().map(|a| g.sees(a, &all)).collect();
                assert_eq!(views.len(), n, "no two nodes see the same majority ({n})");
                // Symmetric: a sees b exactly when b sees a.
                for a in &all {
                    for b in &all {
                        assert_eq!(g.sees(a, &all).contains(b), g.sees(b, &all).contains(a));
                    }
                }
            }
        }
        assert!(majorities_ring(&servers(2), &mut StdRng::seed_from_u64(1)).is_err());
    }

    #[test]
    fn shapes_parse_by_name() {
        for s in SHAPES {
            assert_eq!(s.name().parse::<Shape>().unwrap(), s);
        }
        let e = "ring".parse::<Shape>().unwrap_err();
        assert!(
            e.contains("halves, isolate-leader, bridge, majorities-ring"),
            "{e}"
        );
    }
}
