//! Partition logic kept pure: a [`Grudge`] says, for each node, which peers it must stop hearing
//! from (Jepsen's word). Disjoint groups are one way to make one ([`Grudge::from_groups`]);
//! shapes that are not disjoint groups (`majorities-ring`) build theirs link by link
//! ([`Grudge::from_cuts`]). The iptables rules that carry a grudge out live in
//! `cluster/partition.rs`; the shapes that draw one, in the `partition` fault kind
//! (`fault/partition/shape.rs`). It lives here, below the fault kinds, because the cluster
//! keeps the grudges in effect to apply them again to a node that comes back.
//!
//! A cut is a link: the rules drop a peer's traffic in both directions, so a grudge is kept
//! symmetric (if `a` blocks `b`, `b` blocks `a`). Jepsen drops inbound traffic only and its
//! grudges may be one-way; here a node either talks to a peer or does not.

use std::collections::{BTreeMap, BTreeSet};

use super::ClusterError;

/// For each node named in `groups`, the set of nodes it must no longer hear from: every node in
/// another group. Nodes named in no group are not touched (they keep talking to both sides, a
/// bridge). A node may appear in one group only.
pub fn blocked_peers(
    groups: &[Vec<String>],
    known: &BTreeSet<String>,
) -> Result<BTreeMap<String, BTreeSet<String>>, ClusterError> {
    let mut group_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, g) in groups.iter().enumerate() {
        for n in g {
            check_known(n, known)?;
            if group_of.insert(n, i).is_some() {
                return Err(ClusterError::BadPartition(format!(
                    "node {n} is named in two groups"
                )));
            }
        }
    }
    if groups.iter().filter(|g| !g.is_empty()).count() < 2 {
        return Err(ClusterError::BadPartition(
            "a partition needs at least two non-empty groups".into(),
        ));
    }
    let mut out = BTreeMap::new();
    for (&n, &gi) in &group_of {
        let others: BTreeSet<String> = group_of
            .iter()
            .filter(|&(_, &gj)| gj != gi)
            .map(|(m, _)| m.to_string())
            .collect();
        out.insert(n.to_string(), others);
    }
    Ok(out)
}

fn check_known(n: &str, known: &BTreeSet<String>) -> Result<(), ClusterError> {
    if known.contains(n) {
        Ok(())
    } else {
        Err(ClusterError::UnknownNode {
            node: n.to_string(),
            known: known.iter().cloned().collect::<Vec<_>>().join(", "),
        })
    }
}

/// The peer that stands for every client of the cell (the runner and its worker processes,
/// which reach the servers through the host's published ports) in a [`Grudge`].
pub const CLIENTS: &str = "clients";

/// Which peers each node stops hearing from: a symmetric set of cut links between known nodes
/// (and [`CLIENTS`], when the clients are cut off too). Nodes absent from the map keep every
/// link.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grudge(BTreeMap<String, BTreeSet<String>>);

impl Grudge {
    /// The grudge of disjoint `groups`: every link between two groups is cut; nodes in no group
    /// keep all their links (a bridge).
    pub fn from_groups(
        groups: &[Vec<String>],
        known: &BTreeSet<String>,
    ) -> Result<Grudge, ClusterError> {
        Ok(Grudge(blocked_peers(groups, known)?))
    }

    /// The grudge that cuts each `(a, b)` link (both directions). At least one link, no node
    /// cut from itself, every node known.
    pub fn from_cuts(
        cuts: &[(String, String)],
        known: &BTreeSet<String>,
    ) -> Result<Grudge, ClusterError> {
        if cuts.is_empty() {
            return Err(ClusterError::BadPartition(
                "a partition needs at least one cut link".into(),
            ));
        }
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in cuts {
            check_known(a, known)?;
            check_known(b, known)?;
            if a == b {
                return Err(ClusterError::BadPartition(format!(
                    "node {a} cannot be cut from itself"
                )));
            }
            map.entry(a.clone()).or_default().insert(b.clone());
            map.entry(b.clone()).or_default().insert(a.clone());
        }
        Ok(Grudge(map))
    }

    /// Each node with at least one cut link, and the peers it no longer hears from.
    pub fn blocked(&self) -> &BTreeMap<String, BTreeSet<String>> {
        &self.0
    }

    /// The nodes `node` still hears from among `all`, itself included.
    pub fn sees(&self, node: &str, all: &[String]) -> BTreeSet<String> {
        let empty = BTreeSet::new();
        let blocked = self.0.get(node).unwrap_or(&empty);
        all.iter()
            .filter(|m| !blocked.contains(*m))
            .cloned()
            .collect()
    }

    /// Every server with a cut link, in name order ([`CLIENTS`] is not a server).
    pub fn nodes(&self) -> Vec<String> {
        self.0.keys().filter(|n| *n != CLIENTS).cloned().collect()
    }

    /// This grudge with each `(server, companion)` pair sharing a fate: the companion (a
    /// Sentinel beside its Redis server) loses every link its server lost, to the servers and
    /// to their companions (and to the clients, when they are cut off too). A server with no
    /// cut link leaves its companion every link.
    pub fn with_companions(mut self, pairs: &[(String, String)]) -> Grudge {
        let companion: BTreeMap<&str, &str> = pairs
            .iter()
            .map(|(s, c)| (s.as_str(), c.as_str()))
            .collect();
        let mut cuts: Vec<(String, String)> = Vec::new();
        for (server, c) in pairs {
            for peer in self.0.get(server).into_iter().flatten() {
                cuts.push((c.clone(), peer.clone()));
                if let Some(pc) = companion.get(peer.as_str()) {
                    cuts.push((c.clone(), pc.to_string()));
                }
            }
        }
        for (a, b) in cuts {
            self.0.entry(a.clone()).or_default().insert(b.clone());
            self.0.entry(b).or_default().insert(a);
        }
        self
    }

    /// This grudge with the clients on `home`'s side: they lose every link `home` lost, so
    /// they keep reaching exactly the servers `home` still hears from (Jepsen binds clients to
    /// nodes the same way). A `home` with no cut link leaves the clients every link.
    pub fn with_clients_beside(mut self, home: &str) -> Grudge {
        let cut: BTreeSet<String> = self.0.get(home).cloned().unwrap_or_default();
        for n in &cut {
            self.0
                .entry(n.clone())
                .or_default()
                .insert(CLIENTS.to_string());
        }
        if !cut.is_empty() {
            self.0.insert(CLIENTS.to_string(), cut);
        }
        self
    }

    /// True when no link is cut.
    pub fn is_empty(&self) -> bool {
        self.0.values().all(BTreeSet::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companions_share_their_servers_cuts() {
        let known: BTreeSet<String> = ["r1", "r2", "r3"].map(String::from).into();
        let g = Grudge::from_groups(&[vec!["r1".into()], vec!["r2".into(), "r3".into()]], &known)
            .unwrap()
            .with_clients_beside("r2");
        let pairs: Vec<(String, String)> = (1..=3)
            .map(|i| (format!("r{i}"), format!("s{i}")))
            .collect();
        let g = g.with_companions(&pairs);
        let all: Vec<String> = ["r1", "r2", "r3", "s1", "s2", "s3", CLIENTS]
            .map(String::from)
            .to_vec();
        // s1 sees only r1's side (r1 and itself); s2 and s3 see the majority's side and the
        // clients, not r1 or s1.
        assert_eq!(g.sees("s1", &all), ["r1", "s1"].map(String::from).into());
        assert_eq!(
            g.sees("s2", &all),
            ["r2", "r3", "s2", "s3", CLIENTS].map(String::from).into()
        );
        // Symmetric: r1 no longer hears s2.
        assert!(g.blocked()["r1"].contains("s2"));
        // Companions are touched servers too; the clients are not.
        assert_eq!(
            g.nodes(),
            ["r1", "r2", "r3", "s1", "s2", "s3"]
                .map(String::from)
                .to_vec()
        );
    }

    #[test]
    fn clients_beside_a_node_lose_exactly_its_cut_links() {
        let known: BTreeSet<String> = ["n1", "n2", "n3"].map(String::from).into();
        let g = Grudge::from_groups(&[vec!["n1".into()], vec!["n2".into(), "n3".into()]], &known)
            .unwrap();
        let all: Vec<String> = ["n1", "n2", "n3", CLIENTS].map(String::from).to_vec();
        // Beside the majority: cut from n1 only, both ways.
        let m = g.clone().with_clients_beside("n2");
        assert_eq!(
            m.sees(CLIENTS, &all),
            ["n2", "n3", CLIENTS].map(String::from).into()
        );
        assert!(m.blocked()["n1"].contains(CLIENTS));
        assert!(!m.blocked()["n2"].contains(CLIENTS));
        // Beside the isolated node: cut from the other two.
        let i = g.clone().with_clients_beside("n1");
        assert_eq!(
            i.sees(CLIENTS, &all),
            ["n1", CLIENTS].map(String::from).into()
        );
        // The servers touched stay the servers.
        assert_eq!(i.nodes(), ["n1", "n2", "n3"].map(String::from).to_vec());
        // A home with no cut link: the clients keep everything, the grudge is unchanged.
        let bridge = Grudge::from_cuts(&[("n1".into(), "n3".into())], &known).unwrap();
        assert_eq!(bridge.clone().with_clients_beside("n2"), bridge);
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn even_split_blocks_the_other_half_only() {
        let known: BTreeSet<String> = names(&["a", "b", "c", "d"]).into_iter().collect();
        let plan = blocked_peers(&[names(&["a", "b"]), names(&["c", "d"])], &known).unwrap();
        assert_eq!(plan["a"], names(&["c", "d"]).into_iter().collect());
        assert_eq!(plan["d"], names(&["a", "b"]).into_iter().collect());
    }

    #[test]
    fn unnamed_nodes_bridge_and_bad_groups_are_rejected() {
        let known: BTreeSet<String> = names(&["a", "b", "c"]).into_iter().collect();
        let plan = blocked_peers(&[names(&["a"]), names(&["b"])], &known).unwrap();
        assert!(!plan.contains_key("c"));
        assert!(blocked_peers(&[names(&["a"]), names(&["a"])], &known).is_err());
        assert!(blocked_peers(&[names(&["a", "b", "c"])], &known).is_err());
        let e = blocked_peers(&[names(&["a"]), names(&["x"])], &known).unwrap_err();
        assert!(e.to_string().contains("a, b, c"), "{e}");
    }

    #[test]
    fn cuts_are_links_both_ways_and_groups_still_work() {
        let all = names(&["a", "b", "c", "d"]);
        let known: BTreeSet<String> = all.iter().cloned().collect();
        let g = Grudge::from_cuts(&[("a".into(), "c".into())], &known).unwrap();
        assert_eq!(g.blocked()["c"], BTreeSet::from(["a".to_string()]));
        assert_eq!(
            g.sees("a", &all),
            names(&["a", "b", "d"]).into_iter().collect()
        );
        assert_eq!(g.sees("b", &all).len(), 4, "b keeps every link");
        assert_eq!(g.nodes(), ["a", "c"]);
        let groups =
            Grudge::from_groups(&[names(&["a", "b"]), names(&["c", "d"])], &known).unwrap();
        assert_eq!(
            groups.sees("c", &all),
            names(&["c", "d"]).into_iter().collect()
        );
        assert!(Grudge::from_cuts(&[], &known).is_err());
        assert!(Grudge::from_cuts(&[("a".into(), "a".into())], &known).is_err());
        let e = Grudge::from_cuts(&[("a".into(), "z".into())], &known).unwrap_err();
        assert!(e.to_string().contains("'z'"), "{e}");
        assert!(Grudge::default().is_empty());
    }
}
