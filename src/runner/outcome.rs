//! How a recipe's error becomes a history event: the runner's mapping, so the history itself
//! knows nothing of recipes.

use crate::history::{ErrorKind, Event, EventKind, Op, TIMEOUT_ERROR};
use crate::recipe::LockError;

/// The kind a lock error is counted under.
pub(crate) fn error_kind(err: &LockError) -> ErrorKind {
    match err {
        LockError::Timeout { .. } => ErrorKind::Timeout,
        LockError::Connection(_) => ErrorKind::Connection,
        LockError::Lost { .. } => ErrorKind::Lost,
        LockError::Unsupported { .. } | LockError::KindUnsupported { .. } => ErrorKind::Unsupported,
        LockError::Server(_) => ErrorKind::Server,
        LockError::Withdrawn { .. } => ErrorKind::Withdrawn,
        LockError::Unavailable(_) => ErrorKind::Unavailable,
    }
}

/// The outcome event of a failed lock operation: `info` when the error leaves the outcome
/// unknown, `fail` otherwise, with its kind and a stable text.
pub(crate) fn failed(t_us: u64, client: u32, op: Op, key: &str, err: &LockError) -> Event {
    let kind = if err.is_indeterminate() {
        EventKind::Info
    } else {
        EventKind::Fail
    };
    let text = match err {
        LockError::Timeout { .. } => TIMEOUT_ERROR.to_string(),
        other => other.to_string(),
    };
    Event {
        error: Some(text),
        error_kind: Some(error_kind(err)),
        ..Event::new(t_us, client, kind, op, key)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timeouts_fail_and_lost_connections_are_unknown() {
        let timeout = LockError::Timeout {
            key: "k".into(),
            waited: Duration::from_secs(1),
        };
        let t = failed(5, 1, Op::Acquire, "k", &timeout);
        assert_eq!(
            (t.kind, t.error.as_deref(), t.error_kind),
            (
                EventKind::Fail,
                Some(TIMEOUT_ERROR),
                Some(ErrorKind::Timeout)
            )
        );
        let c = failed(
            5,
            1,
            Op::Release,
            "k",
            &LockError::Connection("reset".into()),
        );
        assert_eq!(
            (c.kind, c.error.as_deref(), c.error_kind),
            (
                EventKind::Info,
                Some("connection problem: reset"),
                Some(ErrorKind::Connection)
            )
        );
        let lost = LockError::Lost {
            key: "k".into(),
            why: "expired".into(),
        };
        assert_eq!(
            failed(1, 0, Op::Release, "k", &lost).error_kind,
            Some(ErrorKind::Lost)
        );
    }
}
