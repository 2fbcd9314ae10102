//! The acquire loop both Redis recipes share, where lock safety is decided: take attempt →
//! granted, or wait for a wake-up, the holder's TTL or the fallback poll, and take again; a
//! retryable error waits out a backoff; at the deadline an attempt whose answer was lost is
//! resolved before the acquisition reports its outcome. What differs between one master and a
//! Redlock round (the take, the subscription, the resolution) is a [`Taker`]'s steps.

use std::time::{Duration, Instant};

use crate::recipe::deadline::Budget;
use crate::recipe::{LockError, Tally};
use crate::service::redis::recipe::common::{Poll, Waiter};

/// A lock granted by the loop (or by a resolution that found a lost take granted it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grant {
    /// The fencing token.
    pub token: u64,
    /// The queue ticket the grant was made under (predecessor), if any.
    pub ticket: Option<u64>,
    /// When the granting request (or Redlock round) was sent: the validity counts from here.
    pub granted_at: Instant,
}

/// What one take attempt came to.
pub(crate) enum Take {
    /// The lock is ours.
    Granted(Grant),
    /// Not granted: wait (once subscribed) for a wake-up, the holder's remaining TTL
    /// (`ttl_left`, after which the lock is free with no message) or `poll`.
    Wait {
        poll: Poll,
        ttl_left: Option<Duration>,
    },
    /// Not granted, nothing to hear: take again, at once or after a pause.
    Again(Option<Duration>),
    /// The client "died" (`unsafe-setnx-expire`'s simulated crash): give up with this error
    /// and clean nothing up, as a dead client would.
    Abandon(LockError),
}

/// What a waiter's subscription came to, before it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hearing {
    /// Subscribed just now: a release that came before the subscription is looked for by a
    /// new take.
    Subscribed,
    /// Subscribed by an earlier wait of the same acquisition: the wake-up will come.
    Already,
    /// No server took the subscription: no wake-up can come, so the wait is at most a fallback
    /// poll ([`Poll::unheard`]), and the next wait tries to subscribe again.
    Deaf,
}

/// What the loop keeps across attempts, for the steps to add to.
#[derive(Default)]
pub(crate) struct Progress {
    /// Round trips sent (a Redlock round counts one per master).
    pub requests: u64,
    /// The last take whose answer was lost: it may have granted, or queued, this owner.
    pub unanswered: Option<LockError>,
}

/// The steps of one acquisition that differ between the single-master and the Redlock recipe.
pub(crate) trait Taker {
    /// One take attempt with `left` of the deadline. Counts its round trips and a lost answer
    /// (one that may have granted) in `progress`; `Err` is an error of the whole attempt.
    async fn take(&mut self, left: Duration, progress: &mut Progress) -> Result<Take, LockError>;

    /// Makes sure `waiter` hears the wake-ups where the next take goes, within `left`, and says
    /// what came of it (see [`Hearing`]).
    async fn subscribe(
        &mut self,
        waiter: &Waiter,
        left: Duration,
        progress: &mut Progress,
    ) -> Hearing;

    /// After a retryable error and its backoff, before the next take: find the server again
    /// (a Sentinel failover may have moved the master).
    async fn reconnect(&mut self, deadline: Instant);

    /// Ends the subscriptions, off the critical path (the grant is ours, or we gave up).
    fn unsubscribe(&mut self, waiter: &Waiter, progress: &mut Progress);

    /// After the loop failed with `err` (not abandoned): leaves nothing behind, and when a take's
    /// answer was lost (`unanswered`) decides its outcome: a grant after all, withdrawn, or
    /// still unknown.
    async fn resolve(
        &mut self,
        err: LockError,
        unanswered: Option<LockError>,
        tally: &Tally,
    ) -> Result<Grant, LockError>;
}

/// Runs `taker`'s takes until one grants, the error is final, or `budget`'s deadline passes;
/// counts wake-ups and requests into `tally`, then resolves a failure.
pub(crate) async fn acquire_loop<T: Taker>(
    taker: &mut T,
    budget: &Budget,
    tally: &Tally,
) -> Result<Grant, LockError> {
    let deadline = budget.deadline();
    // Made at the first wait: an acquisition granted at its first take (every uncontended
    // one) needs no channel to hear wake-ups on (its allocations were half a microsecond of
    // every lock cycle).
    let mut waiter: Option<Waiter> = None;
    let mut progress = Progress::default();
    let mut backoff = budget.backoff();
    let mut abandoned = false;
    let outcome = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Err(budget.timeout());
        }
        match taker.take(left, &mut progress).await {
            Ok(Take::Granted(grant)) => break Ok(grant),
            Ok(Take::Abandon(e)) => {
                abandoned = true;
                break Err(e);
            }
            Ok(Take::Again(None)) => {}
            Ok(Take::Again(Some(pause))) => tokio::time::sleep(pause.min(left)).await,
            Ok(Take::Wait { poll, ttl_left }) => {
                let waiter = waiter.get_or_insert_with(Waiter::new);
                let poll = match taker.subscribe(waiter, left, &mut progress).await {
                    Hearing::Subscribed => continue,
                    Hearing::Already => poll,
                    Hearing::Deaf => poll.unheard(),
                };
                waiter.wait_or_poll(poll, ttl_left, left, tally).await;
            }
            Err(e) if e.is_retryable() => {
                if backoff.wait(deadline).await {
                    taker.reconnect(deadline).await;
                }
            }
            Err(e) => break Err(e),
        }
    };
    // Only a waiter ever subscribed.
    if let Some(waiter) = &waiter {
        taker.unsubscribe(waiter, &mut progress);
        tally.wakeups(waiter.wakeups);
        tally.queue_wakeups(waiter.queue_wakeups);
    }
    tally.requests(progress.requests);
    match outcome {
        // A dead client cleans nothing up.
        Err(e) if !abandoned => taker.resolve(e, progress.unanswered, tally).await,
        other => other,
    }
}
