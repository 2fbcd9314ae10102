//! etcd error mapping, and the clean-up chores a lock client hands its janitor: revoking a
//! lease it gave up on, deleting a key of its own (guarded) that a release or a failed
//! acquisition left behind.

use std::time::Duration;

use etcd_client::{Client, Compare, Txn, TxnOp};

use crate::recipe::janitor::{Chore, Tried, TryFuture};
use crate::recipe::{LockError, Tally};

/// Maps an etcd client error to the lock error a caller can act on.
pub(crate) fn etcd_err(what: &str, e: etcd_client::Error) -> LockError {
    match e {
        // "etcdserver: no leader": the member refuses before proposing anything (the client
        // asks with require_leader), so nothing was applied; ask again once a leader is back.
        etcd_client::Error::GRpcStatus(s) if s.message().contains("no leader") => {
            LockError::Unavailable(format!("{what}: {}", s.message()))
        }
        // gRPC codes CANCELLED (1), DEADLINE_EXCEEDED (4), UNAVAILABLE (14): the request may
        // or may not have been applied.
        etcd_client::Error::GRpcStatus(s) if matches!(i32::from(s.code()), 1 | 4 | 14) => {
            LockError::Connection(format!("{what}: {}", s.message()))
        }
        // Our lease ended (expired or revoked) under us: the next acquire grants a new one.
        etcd_client::Error::GRpcStatus(s) if s.message().contains("lease not found") => {
            LockError::Lost {
                key: what.to_string(),
                why: format!("{}; the next acquire grants a new lease", s.message()),
            }
        }
        // A connection that broke mid-request surfaces as status UNKNOWN (2), "transport error":
        // the request may have landed.
        etcd_client::Error::GRpcStatus(s)
            if i32::from(s.code()) == 2 && s.message().contains("transport error") =>
        {
            LockError::Connection(format!("{what}: {}", s.message()))
        }
        // A connection that could not be opened sent nothing.
        etcd_client::Error::TransportError(t) if format!("{t:?}").contains("refused") => {
            LockError::Unavailable(format!("{what}: {t}"))
        }
        etcd_client::Error::TransportError(t) => LockError::Connection(format!("{what}: {t}")),
        etcd_client::Error::IoError(t) => LockError::Connection(format!("{what}: {t}")),
        other => LockError::Server(format!("{what}: {other}")),
    }
}

/// True when a write that failed this way may still have happened on the server.
pub(super) fn maybe_applied(e: &LockError) -> bool {
    matches!(e, LockError::Connection(_) | LockError::Timeout { .. })
}

/// A clean-up an etcd lock client leaves to its janitor.
pub(super) enum EtcdChore {
    /// Revoke this lease: every key written under it goes, and any put that lands later is
    /// refused. Done when revoked or when the server says the lease is already gone.
    Revoke(i64),
    /// Delete `target` while `guard` holds (the key is still the incarnation or carries the
    /// value we wrote, so someone else's lock is never removed). Done once the server answered
    /// the transaction, whether or not the guard held.
    Delete {
        target: String,
        guard: Option<Compare>,
    },
}

impl Chore for EtcdChore {
    /// A client (cheap to clone, reconnects by itself) and the deadline of one request.
    type Ctx = (Client, Duration);

    fn try_once<'a>(&'a self, ctx: &'a mut Self::Ctx, sent: &'a Tally) -> TryFuture<'a> {
        Box::pin(async move {
            let (client, limit) = ctx;
            // One request a try, whichever the chore.
            sent.requests(1);
            let answered = match self {
                EtcdChore::Revoke(id) => {
                    match tokio::time::timeout(*limit, client.lease_revoke(*id)).await {
                        Ok(Ok(_)) => true,
                        Ok(Err(e)) => e.to_string().contains("lease not found"),
                        Err(_) => false,
                    }
                }
                EtcdChore::Delete { target, guard } => {
                    let txn = Txn::new()
                        .when(guard.clone().into_iter().collect::<Vec<_>>())
                        .and_then([TxnOp::delete(target.as_str(), None)]);
                    matches!(
                        tokio::time::timeout(*limit, client.txn(txn)).await,
                        Ok(Ok(_))
                    )
                }
            };
            if answered { Tried::Done } else { Tried::Again }
        })
    }
}
