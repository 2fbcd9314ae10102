//! A worker's way to the cell's register, which lives in the runner: each access is an `access`
//! line out and an `accessed` line back, matched by id, with a deadline on this side.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::oneshot;

use super::protocol::{AccessResult, FromWorker};
use crate::resource::AccessOp;
use crate::runner::client::AccessFailed;
use crate::sync::LockUnpoisoned;

/// How long a worker waits for the runner to answer an access. The runner answers as soon as it
/// reads the line; this long without an answer means it is wedged or gone.
pub(crate) const ACCESS_TIMEOUT: Duration = Duration::from_secs(5);

/// How much longer an access whose timeout fired waits for its answer. A worker stopped past the
/// timeout (a client pause) thaws with the runner's answer in its pipe, and its timer can fire
/// before its control task has read it: the access would end unanswered although the register
/// applied it (a read recorded, then no write). One short wait more reads it.
const THAW_GRACE: Duration = Duration::from_millis(250);

/// The register as a worker's clients see it: requests sent through `send`, answers handed in
/// by the worker's control task through [`RemoteRegister::answer`].
pub(crate) struct RemoteRegister {
    send: Box<dyn Fn(FromWorker) + Send + Sync>,
    pending: Mutex<HashMap<u64, oneshot::Sender<AccessResult>>>,
    next: AtomicU64,
    timeout: Duration,
}

impl RemoteRegister {
    /// A register reached by sending requests through `send`, each answered within `timeout`.
    pub fn new(send: Box<dyn Fn(FromWorker) + Send + Sync>, timeout: Duration) -> RemoteRegister {
        RemoteRegister {
            send,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            timeout,
        }
    }

    /// Asks the runner to apply the access and waits for its answer: the value read or
    /// written, a refusal, or [`AccessFailed::Unanswered`] after the timeout (the runner may or
    /// may not have applied it; its register recorded whatever happened).
    pub async fn access(
        &self,
        client: u32,
        key: &str,
        token: u64,
        op: AccessOp,
        value: u64,
    ) -> Result<u64, AccessFailed> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        // Registered before the request leaves, so an answer can never arrive unexpected.
        self.pending.locked().insert(id, tx);
        (self.send)(FromWorker::Access {
            id,
            client,
            key: key.to_string(),
            token,
            op,
            value: (op == AccessOp::Write).then_some(value),
        });
        let mut rx = rx;
        let mut answer = tokio::time::timeout(self.timeout, &mut rx).await;
        if answer.is_err() {
            answer = tokio::time::timeout(THAW_GRACE, &mut rx).await;
        }
        self.pending.locked().remove(&id);
        match answer {
            Ok(Ok(AccessResult::Ok(v))) => Ok(v),
            Ok(Ok(AccessResult::Refused(r))) => Err(AccessFailed::Refused(r)),
            Ok(Err(_)) | Err(_) => Err(AccessFailed::Unanswered),
        }
    }

    /// Hands the runner's answer to access `id` to whoever waits for it; an answer nobody
    /// waits for any more (it came after the deadline) is dropped.
    pub fn answer(&self, id: u64, result: AccessResult) {
        if let Some(tx) = self.pending.locked().remove(&id) {
            let _ = tx.send(result);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A register whose requests land in a list, for the test to answer by hand.
    fn remote(timeout: Duration) -> (Arc<RemoteRegister>, Arc<Mutex<Vec<FromWorker>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let log = sent.clone();
        let r = RemoteRegister::new(Box::new(move |m| log.locked().push(m)), timeout);
        (Arc::new(r), sent)
    }

    #[tokio::test]
    async fn answers_reach_their_own_access() {
        let (r, sent) = remote(Duration::from_secs(5));
        let (a, b) = (r.clone(), r.clone());
        let read = tokio::spawn(async move { a.access(0, "k", 3, AccessOp::Read, 0).await });
        let write = tokio::spawn(async move { b.access(1, "j", 4, AccessOp::Write, 8).await });
        while sent.locked().len() < 2 {
            tokio::task::yield_now().await;
        }
        let ids: HashMap<String, u64> = sent
            .locked()
            .iter()
            .map(|m| match m {
                FromWorker::Access {
                    id, key, op, value, ..
                } => {
                    // A read carries no value; a write carries what it writes.
                    let expect = if *op == AccessOp::Write {
                        Some(8)
                    } else {
                        None
                    };
                    assert_eq!(*value, expect, "{m:?}");
                    (key.clone(), *id)
                }
                other => panic!("not an access: {other:?}"),
            })
            .collect();
        assert_ne!(ids["k"], ids["j"]);
        // Answered in the other order: each still gets its own.
        r.answer(ids["j"], AccessResult::Ok(8));
        r.answer(ids["k"], AccessResult::Ok(7));
        assert_eq!(read.await.unwrap(), Ok(7));
        assert_eq!(write.await.unwrap(), Ok(8));
        assert!(r.pending.locked().is_empty());
    }

    #[tokio::test]
    async fn an_unanswered_access_fails_at_the_deadline_and_a_late_answer_is_dropped() {
        let (r, sent) = remote(Duration::from_millis(50));
        let started = std::time::Instant::now();
        assert_eq!(
            r.access(0, "k", 1, AccessOp::Read, 0).await,
            Err(AccessFailed::Unanswered)
        );
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(r.pending.locked().is_empty(), "the waiter is forgotten");
        let id = match &sent.locked()[0] {
            FromWorker::Access { id, .. } => *id,
            other => panic!("{other:?}"),
        };
        r.answer(id, AccessResult::Ok(1));
    }

    #[tokio::test]
    async fn an_answer_read_just_after_the_timeout_still_counts() {
        // A worker thawed after its timeout: the answer is handed in right after the timer
        // fired, within the grace.
        let (r, sent) = remote(Duration::from_millis(50));
        let a = r.clone();
        let read = tokio::spawn(async move { a.access(0, "k", 1, AccessOp::Read, 0).await });
        while sent.locked().is_empty() {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(80)).await;
        let id = match &sent.locked()[0] {
            FromWorker::Access { id, .. } => *id,
            other => panic!("{other:?}"),
        };
        r.answer(id, AccessResult::Ok(4));
        assert_eq!(read.await.unwrap(), Ok(4));
    }
}
