//! The clean-up that outlives the call that needed it, as the best clients have it (Curator's
//! guaranteed delete, etcd's lease revoke when a session closes): a release that got no answer,
//! the queue entry or lock key of an abandoned attempt, a lease or session the client gave up
//! on. Each is a [`Chore`], tried again with backoff until the cluster confirms it, however
//! long the cluster stays away, so that nothing a client left behind waits out its TTL once
//! the cluster answers. A caller that must know (an acquisition whose outcome is unknown)
//! waits for the confirmation, bounded; the others hand the chore over and go on.
//!
//! One janitor per lock client; dropping it (a crash, the end of the cell) stops it, as a dead
//! process cleans nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::recipe::Tally;
use crate::recipe::retry::{Backoff, RetryPolicy};

/// What one try of a chore says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tried {
    /// The cluster confirmed it done, or that there is nothing left to do.
    Done,
    /// No answer, or an answer that leaves it undone: try again later.
    Again,
}

/// A future borrowed from a chore and its context.
pub(crate) type TryFuture<'a> = Pin<Box<dyn Future<Output = Tried> + Send + 'a>>;

/// A clean-up that is tried until the cluster confirms it.
///
/// Contract: [`Chore::try_once`] sends at most a few requests, each under its own deadline,
/// counts each into `sent` as it sends it, and says [`Tried::Done`] only when the server
/// confirmed the effect (or its absence); it must be safe to repeat (guarded deletes, revokes).
pub(crate) trait Chore: Send + 'static {
    /// What every try needs: a client, a connection opened on demand.
    type Ctx: Send + 'static;
    /// One try.
    fn try_once<'a>(&'a self, ctx: &'a mut Self::Ctx, sent: &'a Tally) -> TryFuture<'a>;
}

/// A chore as handed over: who waits for its confirmation, and its requests so far.
type Handed<C> = (C, Option<oneshot::Sender<()>>, Arc<Tally>);

struct Entry<C> {
    chore: C,
    done: Option<oneshot::Sender<()>>,
    sent: Arc<Tally>,
    backoff: Backoff,
    next: Instant,
}

/// Runs chores in the background until each is confirmed.
pub(crate) struct Janitor<C: Chore> {
    tx: mpsc::UnboundedSender<Handed<C>>,
    /// Tells the task the cluster answered again: every pending chore is due at once.
    answered: Arc<Notify>,
    /// Whether the task holds a chore (set by the task): only then is an answer worth its
    /// wake-up. Every answered request calls [`Janitor::cluster_answered`], so waking an idle
    /// task for each would cost a task switch per request (often onto the other worker).
    busy: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl<C: Chore> Drop for Janitor<C> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<C: Chore> Janitor<C> {
    /// A janitor whose chores share `ctx` and wait between tries as `policy` says.
    pub(crate) fn new(ctx: C::Ctx, policy: RetryPolicy) -> Janitor<C> {
        let (tx, rx) = mpsc::unbounded_channel();
        let answered = Arc::new(Notify::new());
        let busy = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(run(ctx, policy, rx, answered.clone(), busy.clone()));
        Janitor {
            tx,
            answered,
            busy,
            task,
        }
    }

    /// The client just had an answer from the cluster: what waits out a backoff step is tried
    /// now, so that what an outage left behind goes as soon as the cluster is back rather than
    /// up to one capped backoff later. Cheap; call it after any answered request: with
    /// nothing pending it is one atomic load and wakes nobody.
    pub(crate) fn cluster_answered(&self) {
        if self.busy.load(Ordering::Acquire) {
            self.answered.notify_one();
        }
    }

    /// Hands `chore` over; it is tried at once, then again until confirmed.
    pub(crate) fn hand(&self, chore: C) {
        let _ = self.tx.send((chore, None, Arc::default()));
    }

    /// Hands `chore` over and waits until it is confirmed (true) or `until` passes (false: it
    /// stays with the janitor, which goes on trying). The requests its tries sent meanwhile
    /// are counted into `tally`: the caller waited for them.
    pub(crate) async fn confirm(&self, chore: C, until: Instant, tally: &Tally) -> bool {
        confirmed([self.watch(chore)], 1, until, tally).await
    }

    /// Hands `chore` over; the [`Confirmation`] hears when the cluster confirmed it.
    pub(crate) fn watch(&self, chore: C) -> Confirmation {
        let (done, confirmed) = oneshot::channel();
        let sent = Arc::new(Tally::default());
        // A janitor that stopped drops the sender: the confirmation never comes.
        let _ = self.tx.send((chore, Some(done), sent.clone()));
        Confirmation(confirmed, sent)
    }
}

/// Hears when one handed chore is confirmed (see [`Janitor::watch`]), and counts what its tries
/// sent.
pub(crate) struct Confirmation(oneshot::Receiver<()>, Arc<Tally>);

/// Waits until `needed` of `confirmations` came (true) or `until` passes (false); the chores
/// not confirmed stay with their janitors. For a clean-up spread over independent servers,
/// each with a janitor of its own (Redlock's masters), whose outcome is known once enough of
/// them confirmed. The requests their tries sent until then are counted into `tally`.
pub(crate) async fn confirmed(
    confirmations: impl IntoIterator<Item = Confirmation>,
    needed: usize,
    until: Instant,
    tally: &Tally,
) -> bool {
    let (waits, sent): (FuturesUnordered<_>, Vec<_>) =
        confirmations.into_iter().map(|c| (c.0, c.1)).unzip();
    let answer = enough(waits, needed, until).await;
    tally.requests(sent.iter().map(|t| t.request_count()).sum());
    answer
}

/// True once `needed` of `waits` said confirmed, false if `until` passes first.
async fn enough(
    mut waits: FuturesUnordered<oneshot::Receiver<()>>,
    needed: usize,
    until: Instant,
) -> bool {
    let enough = async {
        let mut confirmed = 0;
        while confirmed < needed {
            match waits.next().await {
                Some(Ok(())) => confirmed += 1,
                // A chore dropped unconfirmed (its janitor stopped): it never will be.
                Some(Err(_)) => {}
                None => return false,
            }
        }
        true
    };
    tokio::time::timeout_at(until.into(), enough)
        .await
        .unwrap_or(false)
}

async fn run<C: Chore>(
    mut ctx: C::Ctx,
    policy: RetryPolicy,
    mut rx: mpsc::UnboundedReceiver<Handed<C>>,
    answered: Arc<Notify>,
    busy: Arc<AtomicBool>,
) {
    let mut pending: Vec<Entry<C>> = Vec::new();
    let mut open = true;
    loop {
        // Set before waiting, so an answer that comes while a chore waits out its backoff
        // wakes this task (or leaves it a permit, if it is busy trying).
        busy.store(!pending.is_empty(), Ordering::Release);
        let due = pending.iter().map(|e| e.next).min();
        if pending.is_empty() && !open {
            return;
        }
        tokio::select! {
            got = rx.recv(), if open => match got {
                Some((chore, done, sent)) => pending.push(Entry {
                    chore,
                    done,
                    sent,
                    backoff: Backoff::new(policy),
                    next: Instant::now(),
                }),
                // Every sender is gone with the janitor, whose drop aborts this task first.
                None => open = false,
            },
            () = answered.notified() => {
                let now = Instant::now();
                for e in &mut pending {
                    e.next = e.next.min(now);
                }
            },
            _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now).into()), if due.is_some() => {
                let now = Instant::now();
                let mut i = 0;
                while i < pending.len() {
                    if pending[i].next > now {
                        i += 1;
                        continue;
                    }
                    let e = &pending[i];
                    match e.chore.try_once(&mut ctx, &e.sent).await {
                        Tried::Done => {
                            let e = pending.swap_remove(i);
                            if let Some(done) = e.done {
                                let _ = done.send(());
                            }
                        }
                        Tried::Again => {
                            let e = &mut pending[i];
                            e.next = Instant::now() + e.backoff.next_with(&mut rand::rng());
                            i += 1;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;

    /// Done on its `n`-th try; counts tries in the shared context.
    struct After(u32);

    impl Chore for After {
        type Ctx = Arc<AtomicU32>;
        fn try_once<'a>(&'a self, ctx: &'a mut Self::Ctx, sent: &'a Tally) -> TryFuture<'a> {
            Box::pin(async move {
                sent.requests(1);
                let n = ctx.fetch_add(1, Ordering::SeqCst) + 1;
                if n >= self.0 {
                    Tried::Done
                } else {
                    Tried::Again
                }
            })
        }
    }

    fn quick() -> RetryPolicy {
        RetryPolicy {
            initial: Duration::from_millis(2),
            max: Duration::from_millis(4),
        }
    }

    #[tokio::test]
    async fn a_chore_is_tried_until_confirmed_and_the_caller_hears_it() {
        let tries = Arc::new(AtomicU32::new(0));
        let j = Janitor::new(tries.clone(), quick());
        let until = Instant::now() + Duration::from_secs(5);
        let tally = Tally::default();
        assert!(j.confirm(After(4), until, &tally).await);
        assert_eq!(tries.load(Ordering::SeqCst), 4);
        // The caller waited for every try: each one's request is counted.
        assert_eq!(tally.request_count(), 4);
    }

    #[tokio::test]
    async fn an_unconfirmed_chore_stays_and_is_tried_on_after_the_caller_gave_up() {
        let tries = Arc::new(AtomicU32::new(0));
        let j = Janitor::new(tries.clone(), quick());
        let until = Instant::now() + Duration::from_millis(20);
        let tally = Tally::default();
        assert!(!j.confirm(After(1_000_000), until, &tally).await);
        let at_give_up = tries.load(Ordering::SeqCst);
        // What was sent while the caller waited, and nothing after.
        assert!((1..=u64::from(at_give_up)).contains(&tally.request_count()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(tries.load(Ordering::SeqCst) > at_give_up);
        // Dropping the janitor stops it: a crashed client cleans nothing.
        drop(j);
        tokio::time::sleep(Duration::from_millis(10)).await;
        let after_drop = tries.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(tries.load(Ordering::SeqCst), after_drop);
    }

    #[tokio::test]
    async fn an_answer_from_the_cluster_makes_a_waiting_chore_due_at_once() {
        let tries = Arc::new(AtomicU32::new(0));
        // A backoff of a minute: without the nudge the second try would come far too late.
        let j = Janitor::new(
            tries.clone(),
            RetryPolicy {
                initial: Duration::from_secs(60),
                max: Duration::from_secs(60),
            },
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Idle, the task is not woken by answers (every request's).
        assert!(!j.busy.load(Ordering::SeqCst));
        j.hand(After(2));
        let started = Instant::now();
        while tries.load(Ordering::SeqCst) < 1 && started.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            tries.load(Ordering::SeqCst),
            1,
            "the second try waits its backoff"
        );
        assert!(
            j.busy.load(Ordering::SeqCst),
            "a chore waits: answers wake the task"
        );
        j.cluster_answered();
        while tries.load(Ordering::SeqCst) < 2 && started.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(tries.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!j.busy.load(Ordering::SeqCst), "idle again once confirmed");
    }

    /// Done on its first try when it is good, never otherwise; counts tries.
    struct Good(bool);

    impl Chore for Good {
        type Ctx = Arc<AtomicU32>;
        fn try_once<'a>(&'a self, ctx: &'a mut Self::Ctx, sent: &'a Tally) -> TryFuture<'a> {
            Box::pin(async move {
                sent.requests(2);
                ctx.fetch_add(1, Ordering::SeqCst);
                if self.0 { Tried::Done } else { Tried::Again }
            })
        }
    }

    #[tokio::test]
    async fn confirmed_needs_that_many_confirmations_and_no_more() {
        let tries = Arc::new(AtomicU32::new(0));
        let j = Janitor::new(tries.clone(), quick());
        let soon = || Instant::now() + Duration::from_millis(300);
        // Three of five confirm: enough for three, not for four.
        let five = || [true, true, false, true, false].map(|g| j.watch(Good(g)));
        let tally = Tally::default();
        assert!(confirmed(five(), 3, soon(), &tally).await);
        // Two requests a try, at least one try of each confirmed one.
        assert!(tally.request_count() >= 6, "{}", tally.request_count());
        let started = Instant::now();
        assert!(!confirmed(five(), 4, soon(), &tally).await);
        assert!(started.elapsed() >= Duration::from_millis(250));
        // Nothing needed: confirmed at once.
        assert!(confirmed([j.watch(Good(false))], 0, soon(), &tally).await);
    }

    #[tokio::test]
    async fn handed_chores_run_without_anyone_waiting() {
        let tries = Arc::new(AtomicU32::new(0));
        let j = Janitor::new(tries.clone(), quick());
        j.hand(After(3));
        let started = Instant::now();
        while tries.load(Ordering::SeqCst) < 3 && started.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(tries.load(Ordering::SeqCst), 3);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            tries.load(Ordering::SeqCst),
            3,
            "a confirmed chore is not tried again"
        );
    }
}
