//! Network partitions between groups of nodes, made with iptables DROP rules inside the
//! containers (a `LOCKBENCH` chain hooked into INPUT and OUTPUT), so any split is possible,
//! even ones (2|2) that leave no side with a majority, and shapes that are no groups at all
//! (a majorities ring). Which node drops whom is worked out by [`super::grudge`] as a
//! [`Grudge`]; this file only turns it into rules.

use std::collections::{BTreeMap, BTreeSet};

use futures::future::join_all;

use super::{CLIENTS, Grudge};
use super::{Cluster, ClusterError, NodeState};

/// The shell line that sets `$IPT` to the iptables flavour that works in this kernel, as a
/// literal for `concat!`.
macro_rules! pick_iptables {
    () => {
        "IPT=iptables; $IPT -w -L -n >/dev/null 2>&1 || IPT=iptables-legacy\n"
    };
}

/// [`pick_iptables`]'s line, for the peer-latency redirect's start-up.
pub(crate) const PICK_IPTABLES: &str = pick_iptables!();

/// Picks the iptables flavour that works in this kernel, then makes sure our chain is hooked.
const PREAMBLE: &str = concat!(
    "set -e\n",
    pick_iptables!(),
    r#"$IPT -w -N LOCKBENCH 2>/dev/null || true
$IPT -w -C INPUT -j LOCKBENCH 2>/dev/null || $IPT -w -I INPUT -j LOCKBENCH
$IPT -w -C OUTPUT -j LOCKBENCH 2>/dev/null || $IPT -w -I OUTPUT -j LOCKBENCH
"#
);

/// Removes every partition rule in one node.
pub(crate) const HEAL_SCRIPT: &str = concat!(
    pick_iptables!(),
    "$IPT -w -F LOCKBENCH 2>/dev/null || true\n"
);

impl Cluster {
    /// Cuts the network between the given groups of node names (e.g. `[["zk1","zk2"],["zk3","zk4"]]`).
    /// Every named node must be running. Partitions add up until [`Cluster::heal`].
    pub async fn partition(&self, groups: &[Vec<String>]) -> Result<(), ClusterError> {
        let known: BTreeSet<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        self.partition_grudge(&Grudge::from_groups(groups, &known)?)
            .await
    }

    /// Cuts every link `grudge` names: each node with a grudge drops its peers' traffic both
    /// ways. Cuts add up until [`Cluster::heal`]. A node killed or paused now gets its cuts
    /// when it comes back (`Cluster::restore_cuts`), as do its peers' rules naming its new
    /// address: the partition holds for it as long as the partition lasts.
    pub async fn partition_grudge(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        self.validate_grudge(grudge)?;
        self.cuts.lock().expect("cuts lock").push(grudge.clone());
        self.apply_grudge(grudge).await
    }

    /// Applies every partition in effect again, to the nodes running now: called when a node
    /// restarts (its network namespace, and with it its rules, is new; its address may be too)
    /// or resumes (a cut made while it was paused could not reach it). Rules already in place
    /// are added twice, which drops nothing more.
    pub(crate) async fn restore_cuts(&self) -> Result<(), ClusterError> {
        let cuts = self.cuts.lock().expect("cuts lock").clone();
        for g in &cuts {
            self.apply_grudge(g).await?;
        }
        Ok(())
    }

    /// The servers the partitions in effect cut `node` off from, in name order.
    pub fn cut_from(&self, node: &str) -> Vec<String> {
        let cuts = self.cuts.lock().expect("cuts lock");
        let blocked: BTreeSet<&String> = cuts
            .iter()
            .filter_map(|g| g.blocked().get(node))
            .flatten()
            .filter(|peer| self.servers().any(|n| n.name() == peer.as_str()))
            .collect();
        blocked.into_iter().cloned().collect()
    }

    fn validate_grudge(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        let plan = grudge.blocked();
        for name in plan.keys().chain(plan.values().flatten()) {
            if name != CLIENTS {
                self.node(name)?;
            }
        }
        Ok(())
    }

    async fn apply_grudge(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        let plan = grudge.blocked();
        self.cut(plan, false).await
    }

    /// The cluster-network address of every node, and of the clients (the network's gateway)
    /// when `clients` is true.
    async fn addresses(&self, clients: bool) -> Result<BTreeMap<String, String>, ClusterError> {
        let looked_up = join_all(self.nodes.iter().map(|n| async move {
            let ip = n.network_ip(&self.docker, &self.network).await?;
            Ok::<_, ClusterError>(ip.map(|ip| (n.name.clone(), ip)))
        }))
        .await;
        let mut ips = BTreeMap::new();
        for found in looked_up {
            ips.extend(found?);
        }
        if clients {
            // Clients reach the servers through the host's published ports: inside a container
            // their traffic comes from (and goes to) the network's gateway.
            let gateway = self.nodes[0]
                .network_gateway(&self.docker, &self.network)
                .await?;
            let Some(gateway) = gateway else {
                return Err(ClusterError::BadPartition(format!(
                    "network {} has no gateway to cut the clients off at",
                    self.network
                )));
            };
            ips.insert(CLIENTS.to_string(), gateway);
        }
        Ok(ips)
    }

    /// Adds the rules of `plan` (node → the peers it stops hearing) to each running node; with
    /// `replace`, each node's rules are flushed first in the same script, so a node keeps no gap
    /// between its old and new rules. Nodes not running get theirs when they come back.
    async fn cut(
        &self,
        plan: &BTreeMap<String, BTreeSet<String>>,
        replace: bool,
    ) -> Result<(), ClusterError> {
        let ips = self.addresses(plan.contains_key(CLIENTS)).await?;
        // The clients are no container: only the servers get rules (both ways).
        let mut scripts = Vec::new();
        for (name, peers) in plan.iter().filter(|(n, _)| *n != CLIENTS) {
            let node = self.node(name)?;
            if node.state() != NodeState::Running {
                // Cut when it restarts or resumes (restore_cuts).
                continue;
            }
            let mut script = PREAMBLE.to_string();
            if replace {
                script.push_str("$IPT -w -F LOCKBENCH\n");
            }
            for p in peers {
                let Some(ip) = ips.get(p) else { continue };
                script.push_str(&format!(
                    "$IPT -w -A LOCKBENCH -s {ip} -j DROP\n$IPT -w -A LOCKBENCH -d {ip} -j DROP\n"
                ));
            }
            scripts.push((node, script));
        }
        // Every node at once: one `docker exec` each takes ~0.5 s, so in turn a 4-node split
        // would take effect (and heal) one node at a time over about 2 s.
        all_nodes(
            scripts
                .iter()
                .map(|(node, script)| node.exec_script(script)),
        )
        .await
    }

    /// Removes the cuts of `grudge` and keeps every other partition in effect: each running
    /// node's rules are replaced, in one script, by those of the partitions left.
    pub async fn heal_grudge(&self, grudge: &Grudge) -> Result<(), ClusterError> {
        let rest = {
            let mut cuts = self.cuts.lock().expect("cuts lock");
            if let Some(i) = cuts.iter().position(|g| g == grudge) {
                cuts.remove(i);
            }
            cuts.clone()
        };
        if rest.is_empty() {
            return self.heal().await;
        }
        // Every node's rules become those of the partitions left, in one script per node.
        let mut plan: BTreeMap<String, BTreeSet<String>> = self
            .nodes
            .iter()
            .map(|n| (n.name.clone(), BTreeSet::new()))
            .collect();
        for g in &rest {
            for (node, peers) in g.blocked() {
                plan.entry(node.clone())
                    .or_default()
                    .extend(peers.iter().cloned());
            }
        }
        for n in &self.nodes {
            if n.state() == NodeState::Paused {
                // Flushed on resume, then the partitions left are applied again.
                *n.heal_pending.lock().expect("heal lock") = true;
            }
        }
        self.cut(&plan, true).await
    }

    /// Removes every partition rule from every node. A paused node is healed when it resumes;
    /// a killed node lost its rules with its network namespace.
    pub async fn heal(&self) -> Result<(), ClusterError> {
        let mut running = Vec::new();
        for n in &self.nodes {
            match n.state() {
                NodeState::Running => running.push(n),
                NodeState::Paused => *n.heal_pending.lock().expect("heal lock") = true,
                NodeState::Killed => {}
            }
        }
        all_nodes(running.iter().map(|n| n.exec_script(HEAL_SCRIPT))).await?;
        self.cuts.lock().expect("cuts lock").clear();
        Ok(())
    }
}

/// Runs one step per node concurrently and waits for every one (none is abandoned half-way
/// when another fails); the first error, if any, is the answer.
async fn all_nodes<T>(
    steps: impl IntoIterator<Item = impl std::future::Future<Output = Result<T, ClusterError>>>,
) -> Result<(), ClusterError> {
    for done in join_all(steps).await {
        done?;
    }
    Ok(())
}
