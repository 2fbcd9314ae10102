//! Partition shapes as pure logic: from groups of node names, which peers each node must stop
//! hearing from. The iptables rules that carry it out live in `cluster/partition.rs`.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::ClusterError;

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
            if !known.contains(n) {
                return Err(ClusterError::UnknownNode {
                    node: n.clone(),
                    known: known.iter().cloned().collect::<Vec<_>>().join(", "),
                });
            }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
