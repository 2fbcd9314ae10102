//! etcd error mapping and the best-effort clean-up of keys a failed acquisition may leave.

use std::time::Duration;

use etcd_client::{Client, Compare, Txn, TxnOp};

use crate::recipe::LockError;
use crate::recipe::deadline::Budget;

/// Maps an etcd client error to the lock error a caller can act on.
pub(super) fn etcd_err(what: &str, e: etcd_client::Error) -> LockError {
    match e {
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
        etcd_client::Error::TransportError(t) => LockError::Connection(format!("{what}: {t}")),
        etcd_client::Error::IoError(t) => LockError::Connection(format!("{what}: {t}")),
        other => LockError::Server(format!("{what}: {other}")),
    }
}

/// True when a write that failed this way may still have happened on the server.
pub(super) fn maybe_applied(e: &LockError) -> bool {
    matches!(e, LockError::Connection(_) | LockError::Timeout { .. })
}

/// Deletes `target` after a failed or unanswered acquisition of lock `key`, only while `guard`
/// (if any) holds (the key is still the incarnation we created, or carries our lease), so that a clean-up
/// never removes someone else's lock. Returns false if the server did not answer: the caller
/// keeps it as an orphan to retry, as the key would hold the lock (herd) or our queue place.
pub(super) async fn take_back(
    client: &Client,
    key: &str,
    target: &str,
    guard: Option<Compare>,
    request_timeout: Duration,
) -> bool {
    let budget = Budget::cleanup(key, request_timeout, 1);
    let mut c = client.clone();
    let txn = Txn::new()
        .when(guard.into_iter().collect::<Vec<_>>())
        .and_then([TxnOp::delete(target, None)]);
    matches!(budget.run("delete", c.txn(txn)).await, Ok(Ok(_)))
}
