//! Network partitions between groups of nodes, made with iptables DROP rules inside the
//! containers (a `LOCKBENCH` chain hooked into INPUT and OUTPUT), so any split is possible,
//! even ones (2|2) that leave no side with a majority.

use std::collections::{BTreeMap, BTreeSet};

use super::{Cluster, ClusterError, NodeState};

/// Picks the iptables flavour that works in this kernel, then makes sure our chain is hooked.
const PREAMBLE: &str = r#"set -e
IPT=iptables; $IPT -w -L -n >/dev/null 2>&1 || IPT=iptables-legacy
$IPT -w -N LOCKBENCH 2>/dev/null || true
$IPT -w -C INPUT -j LOCKBENCH 2>/dev/null || $IPT -w -I INPUT -j LOCKBENCH
$IPT -w -C OUTPUT -j LOCKBENCH 2>/dev/null || $IPT -w -I OUTPUT -j LOCKBENCH
"#;

/// Removes every partition rule in one node.
pub(crate) const HEAL_SCRIPT: &str = r#"IPT=iptables; $IPT -w -L -n >/dev/null 2>&1 || IPT=iptables-legacy
$IPT -w -F LOCKBENCH 2>/dev/null || true
"#;

/// For each node named in `groups`, the set of nodes it must no longer hear from: every node in
/// another group. Nodes named in no group are not touched (they keep talking to both sides, a
/// bridge). A node may appear in one group only.
pub(crate) fn blocked_peers(
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

impl Cluster {
    /// Cuts the network between the given groups of node names (e.g. `[["zk1","zk2"],["zk3","zk4"]]`).
    /// Every named node must be running. Partitions add up until [`Cluster::heal`].
    pub async fn partition(&self, groups: &[Vec<String>]) -> Result<(), ClusterError> {
        let known: BTreeSet<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let plan = blocked_peers(groups, &known)?;
        let mut ips = BTreeMap::new();
        for n in &self.nodes {
            if let Some(ip) = n.network_ip(&self.docker, &self.network).await? {
                ips.insert(n.name.clone(), ip);
            }
        }
        for (name, peers) in &plan {
            let node = self.node(name)?;
            if node.state() != NodeState::Running {
                return Err(ClusterError::BadState {
                    node: name.clone(),
                    state: node.state(),
                    wanted: "running",
                });
            }
            let mut script = PREAMBLE.to_string();
            for p in peers {
                let Some(ip) = ips.get(p) else { continue };
                script.push_str(&format!(
                    "$IPT -w -A LOCKBENCH -s {ip} -j DROP\n$IPT -w -A LOCKBENCH -d {ip} -j DROP\n"
                ));
            }
            node.exec_script(&script).await?;
        }
        Ok(())
    }

    /// Removes every partition rule from every node. A paused node is healed when it resumes;
    /// a killed node lost its rules with its network namespace.
    pub async fn heal(&self) -> Result<(), ClusterError> {
        for n in &self.nodes {
            match n.state() {
                NodeState::Running => {
                    n.exec_script(HEAL_SCRIPT).await?;
                }
                NodeState::Paused => *n.heal_pending.lock().expect("heal lock") = true,
                NodeState::Killed => {}
            }
        }
        Ok(())
    }
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
