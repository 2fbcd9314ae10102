//! The clean-up chores a ZooKeeper lock client hands its janitor: nodes of its own that a
//! release or a failed acquisition could not remove, and everything a session it gave up on
//! left. The janitor asks through a session of its own, opened when it has work: the client's
//! session may be the one that ended, and ZooKeeper lets any session delete a node (each delete
//! is guarded by the owner, the attempt id in the data, and the version read with them).
//!
//! Why a session the client gave up on needs this: the client declares its session expired
//! after 7/5 of the session timeout without a server (zookeeper-client does), but a quorum that
//! comes back renews every session it knows for a whole timeout. Without a clean-up, the
//! session's ephemeral nodes would hold the lock (herd) or the head of the queue for another
//! session timeout after a long partition heals.

use std::collections::HashSet;
use std::sync::Mutex;

use zookeeper_client as zk;

use crate::recipe::deadline::Budget;
use crate::recipe::janitor::{Chore, Tried, TryFuture};
use crate::recipe::{RecipeConfig, Tally};
use crate::service::zookeeper::recipe::HERD_NODE;
use crate::service::zookeeper::recipe::session::{Mine, delete_owned, sweep_owned};

/// A clean-up a ZooKeeper lock client leaves to its janitor.
#[derive(Debug, Clone)]
pub(super) enum ZkChore {
    /// Delete `path` while it is a node of session `owner` that `which` allows.
    Node {
        path: String,
        owner: i64,
        which: Mine,
    },
    /// Delete the nodes of session `owner` in lock directory `dir` that `which` allows: its
    /// queue nodes and the herd's lock node.
    Dir {
        dir: String,
        owner: i64,
        which: Mine,
    },
}

/// What the janitor's tries share: where the ensemble is, and its own session.
pub(super) struct ZkJanitorCtx {
    connect_string: String,
    config: RecipeConfig,
    client: Option<zk::Client>,
}

impl ZkJanitorCtx {
    pub(super) fn new(connect_string: String, config: RecipeConfig) -> ZkJanitorCtx {
        ZkJanitorCtx {
            connect_string,
            config,
            client: None,
        }
    }

    /// The janitor's session, opened (again) when it has none or the last one ended.
    async fn client(&mut self) -> Option<zk::Client> {
        let usable = self.client.as_ref().is_some_and(|c| {
            !matches!(
                c.state(),
                zk::SessionState::Expired | zk::SessionState::Closed | zk::SessionState::AuthFailed
            )
        });
        if !usable {
            // Not detached: dropping it closes the session on the server.
            let mut connector = zk::Client::connector();
            connector = connector.with_session_timeout(self.config.ttl);
            if let Some(c) = &self.config.credentials {
                connector = connector.with_auth("digest", &c.zookeeper_digest());
            }
            let connecting = connector.connect(&self.connect_string);
            self.client = tokio::time::timeout(self.config.request_timeout * 2, connecting)
                .await
                .ok()
                .and_then(Result::ok);
        }
        self.client.clone()
    }
}

impl Chore for ZkChore {
    type Ctx = ZkJanitorCtx;

    fn try_once<'a>(&'a self, ctx: &'a mut Self::Ctx, sent: &'a Tally) -> TryFuture<'a> {
        Box::pin(async move {
            let Some(client) = ctx.client().await else {
                return Tried::Again;
            };
            let timeout = ctx.config.request_timeout;
            // One try is a handful of requests: the janitor's backoff paces the next.
            let budget = Budget::cleanup("clean-up", timeout, 4);
            let none = Mutex::new(HashSet::new());
            // Requests counted as the acquisitions count them: a getData, and a delete when
            // the node was to go; a sweep adds its getChildren. A failed try counts one.
            let done = match self {
                ZkChore::Node { path, owner, which } => {
                    delete_owned(&client, *owner, path, *which, &none, &budget)
                        .await
                        .map(|deleted| 1 + u64::from(deleted))
                }
                ZkChore::Dir { dir, owner, which } => {
                    let herd = Some(HERD_NODE);
                    sweep_owned(&client, *owner, dir, herd, *which, &none, &budget).await
                }
            };
            sent.requests(*done.as_ref().unwrap_or(&1));
            match done {
                Ok(_) => Tried::Done,
                Err(_) => Tried::Again,
            }
        })
    }
}
