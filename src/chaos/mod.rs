//! The nemesis' vocabulary: faults as verb pairs (kill/restart, pause/resume, partition/heal),
//! the [`Target`]s they hit, and partition shapes. A fault acts through [`Faultable`], which a
//! real [`Cluster`] implements (and a test double can), and every fault it starts is undone by
//! [`Faults::heal_all`] at the end of a cell; should a run end early, dropping the cluster
//! removes its containers, and with them every partition rule and paused process.
//!
//! Fault schedules (`chaos/*.toml`) and the nemesis that plays them come with the chaos issue;
//! this module is the seam they plug into.

pub mod partition;
pub mod target;

use std::future::Future;

pub use target::{Target, TargetError, resolve};

use crate::cluster::{Cluster, ClusterError, DataOnRestart};

/// What faults act on: a cluster's servers by name.
///
/// Contract: every method returns once the change is in effect (or failed); `heal` removes every
/// partition rule; the methods are safe to call again on a node already in the wanted state.
pub trait Faultable: Sync {
    /// The server names faults may target, in a stable order.
    fn servers(&self) -> Vec<String>;
    /// The current leader's name, if there is one.
    fn leader(&self) -> impl Future<Output = Result<Option<String>, ClusterError>>;
    /// Kills `node` (SIGKILL).
    fn kill(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Starts a killed `node` again.
    fn restart(
        &self,
        node: &str,
        data: DataOnRestart,
    ) -> impl Future<Output = Result<(), ClusterError>>;
    /// Freezes `node`.
    fn pause(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Thaws `node`.
    fn resume(&self, node: &str) -> impl Future<Output = Result<(), ClusterError>>;
    /// Cuts the network between `groups` (nodes in no group bridge them).
    fn partition(&self, groups: &[Vec<String>]) -> impl Future<Output = Result<(), ClusterError>>;
    /// Removes every partition.
    fn heal(&self) -> impl Future<Output = Result<(), ClusterError>>;
}

impl Faultable for Cluster {
    fn servers(&self) -> Vec<String> {
        Cluster::servers(self)
            .map(|n| n.name().to_string())
            .collect()
    }
    async fn leader(&self) -> Result<Option<String>, ClusterError> {
        Cluster::leader(self).await
    }
    async fn kill(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::kill(self, node).await
    }
    async fn restart(&self, node: &str, data: DataOnRestart) -> Result<(), ClusterError> {
        Cluster::restart(self, node, data).await
    }
    async fn pause(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::pause(self, node).await
    }
    async fn resume(&self, node: &str) -> Result<(), ClusterError> {
        Cluster::resume(self, node).await
    }
    async fn partition(&self, groups: &[Vec<String>]) -> Result<(), ClusterError> {
        Cluster::partition(self, groups).await
    }
    async fn heal(&self) -> Result<(), ClusterError> {
        Cluster::heal(self).await
    }
}

/// A fault as a verb pair: what starting it did, so that ending it undoes exactly that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Killed these nodes; the end restarts them.
    Kill {
        /// The killed nodes.
        nodes: Vec<String>,
        /// What a restart does with their data.
        data: DataOnRestart,
    },
    /// Paused these nodes; the end resumes them.
    Pause {
        /// The paused nodes.
        nodes: Vec<String>,
    },
    /// Cut the network between these groups; the end heals it.
    Partition {
        /// The sides.
        groups: Vec<Vec<String>>,
    },
}

impl Fault {
    /// The fault's kind, as histories and reports name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Kill { .. } => "kill",
            Fault::Pause { .. } => "pause",
            Fault::Partition { .. } => "partition",
        }
    }

    /// Every node the fault touches.
    pub fn nodes(&self) -> Vec<String> {
        match self {
            Fault::Kill { nodes, .. } | Fault::Pause { nodes } => nodes.clone(),
            Fault::Partition { groups } => groups.concat(),
        }
    }

    async fn start<C: Faultable>(&self, on: &C) -> Result<(), ClusterError> {
        match self {
            Fault::Kill { nodes, .. } => {
                for n in nodes {
                    on.kill(n).await?;
                }
                Ok(())
            }
            Fault::Pause { nodes } => {
                for n in nodes {
                    on.pause(n).await?;
                }
                Ok(())
            }
            Fault::Partition { groups } => on.partition(groups).await,
        }
    }

    async fn end<C: Faultable>(&self, on: &C) -> Result<(), ClusterError> {
        match self {
            Fault::Kill { nodes, data } => {
                for n in nodes {
                    on.restart(n, *data).await?;
                }
                Ok(())
            }
            Fault::Pause { nodes } => {
                for n in nodes {
                    on.resume(n).await?;
                }
                Ok(())
            }
            Fault::Partition { .. } => on.heal().await,
        }
    }
}

/// The faults in effect on one cluster, so every one of them is undone.
#[derive(Debug, Default)]
pub struct Faults {
    active: Vec<Fault>,
}

impl Faults {
    /// Starts `fault` on `on` and remembers it, even if starting it failed half-way (some
    /// nodes may already be killed or paused).
    pub async fn start<C: Faultable>(&mut self, on: &C, fault: Fault) -> Result<(), ClusterError> {
        let r = fault.start(on).await;
        self.active.push(fault);
        r
    }

    /// Ends the most recent fault still in effect.
    pub async fn end_last<C: Faultable>(&mut self, on: &C) -> Result<(), ClusterError> {
        match self.active.pop() {
            Some(f) => f.end(on).await,
            None => Ok(()),
        }
    }

    /// Ends every fault still in effect, newest first, going on past failures so one stuck
    /// node does not leave the others broken; returns the first failure.
    pub async fn heal_all<C: Faultable>(&mut self, on: &C) -> Result<(), ClusterError> {
        let mut first = None;
        while let Some(f) = self.active.pop() {
            if let Err(e) = f.end(on).await {
                first.get_or_insert(e);
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// True when no fault is in effect.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    use super::*;

    /// Records what faults did, and refuses to pause `stuck`.
    #[derive(Default)]
    struct Recording {
        log: Mutex<Vec<String>>,
        down: Mutex<BTreeSet<String>>,
        stuck: Option<String>,
    }

    impl Recording {
        fn note(&self, s: String) {
            self.log.lock().unwrap().push(s);
        }
    }

    impl Faultable for Recording {
        fn servers(&self) -> Vec<String> {
            vec!["a".into(), "b".into(), "c".into()]
        }
        async fn leader(&self) -> Result<Option<String>, ClusterError> {
            Ok(Some("b".into()))
        }
        async fn kill(&self, node: &str) -> Result<(), ClusterError> {
            self.down.lock().unwrap().insert(node.into());
            self.note(format!("kill {node}"));
            Ok(())
        }
        async fn restart(&self, node: &str, _: DataOnRestart) -> Result<(), ClusterError> {
            self.down.lock().unwrap().remove(node);
            self.note(format!("restart {node}"));
            Ok(())
        }
        async fn pause(&self, node: &str) -> Result<(), ClusterError> {
            if self.stuck.as_deref() == Some(node) {
                return Err(ClusterError::BadPartition(format!("{node} is stuck")));
            }
            self.down.lock().unwrap().insert(node.into());
            self.note(format!("pause {node}"));
            Ok(())
        }
        async fn resume(&self, node: &str) -> Result<(), ClusterError> {
            self.down.lock().unwrap().remove(node);
            self.note(format!("resume {node}"));
            Ok(())
        }
        async fn partition(&self, groups: &[Vec<String>]) -> Result<(), ClusterError> {
            self.note(format!("partition {groups:?}"));
            Ok(())
        }
        async fn heal(&self) -> Result<(), ClusterError> {
            self.note("heal".into());
            Ok(())
        }
    }

    #[tokio::test]
    async fn every_started_fault_is_undone_newest_first() {
        let c = Recording::default();
        let mut f = Faults::default();
        let data = DataOnRestart::Keep;
        f.start(
            &c,
            Fault::Kill {
                nodes: vec!["b".into()],
                data,
            },
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::Partition {
                groups: vec![vec!["a".into()], vec!["c".into()]],
            },
        )
        .await
        .unwrap();
        f.start(
            &c,
            Fault::Pause {
                nodes: vec!["a".into(), "c".into()],
            },
        )
        .await
        .unwrap();
        assert_eq!(c.down.lock().unwrap().len(), 3);
        f.heal_all(&c).await.unwrap();
        assert!(f.is_empty());
        assert!(c.down.lock().unwrap().is_empty(), "every node is back");
        let log = c.log.lock().unwrap().clone();
        assert_eq!(
            &log[log.len() - 4..],
            ["resume a", "resume c", "heal", "restart b"]
        );
    }

    #[tokio::test]
    async fn a_fault_that_failed_half_way_is_still_undone() {
        let c = Recording {
            stuck: Some("c".into()),
            ..Recording::default()
        };
        let mut f = Faults::default();
        let started = f
            .start(
                &c,
                Fault::Pause {
                    nodes: vec!["a".into(), "c".into()],
                },
            )
            .await;
        assert!(started.is_err());
        assert_eq!(*c.down.lock().unwrap(), BTreeSet::from(["a".to_string()]));
        f.heal_all(&c).await.unwrap();
        assert!(
            c.down.lock().unwrap().is_empty(),
            "a was resumed although c failed"
        );
    }

    #[tokio::test]
    async fn targets_resolve_against_the_faultable() {
        use rand::SeedableRng;
        let c = Recording::default();
        let leader = c.leader().await.unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let nodes = resolve(Target::Leader, &c.servers(), leader.as_deref(), &mut rng).unwrap();
        assert_eq!(nodes, ["b"]);
    }
}
