//! The kinds that share the lock on one Redis master: the read-write lock and the semaphore,
//! under `herd` and `predecessor`, and the server calls they make (scripts in `scripts.rs`,
//! from `SHARED_HELPERS` on).
//!
//! **The approach: a FIFO queue judged by the one rule, evaluated on the server.** Each
//! acquisition joins the lock's ticket queue (the mutex predecessor's sorted set, `K:q`) with
//! its claim in its owner value (`<client>:<seq>-read`, `-write`, `-permit`), and the scripts
//! grant by [`crate::recipe::claim::turn`], written in Lua over the whole queue: a writer at
//! the head, a reader with no writer ahead, the first N permits. A grant draws the next fencing
//! token (`INCR K:fence`), kept in `K:h` beside the entry, and turns the entry's expiry in
//! `K:qx` into the lease's end, which the watchdog renews (every ttl/3, owner-checked) and
//! which, when it passes, drops the entry like a dead waiter's: the queue is the whole state, as
//! ZooKeeper's sequential nodes and etcd's create revisions are for their recipes, and every
//! change is one atomic script. Release (owner-checked: only an entry that still holds
//! counts as released), giving up, the lost-answer resolution and the janitor are the mutex's,
//! on these scripts.
//!
//! **Wake-ups.** Only a removal (a release, a waiter giving up, an expired entry dropped) can let
//! anybody in, as entries join only at the tail. Every script that removes computes the rule's
//! grants before and after, in the same atomic step, and publishes:
//! - **herd**: to `K:released`, where every waiter listens: every removal wakes every waiter,
//!   and each takes again (the queue still decides: the herd races for nothing but a look).
//! - **predecessor**: to the own channel (`K:w:<owner>`) of each waiter the removal just let
//!   in, and nobody else. ZooKeeper and etcd get there by having each waiter watch the one
//!   entry ahead (and a semaphore's holders mark their grants, so a waiter watching a permit
//!   learns of its grant); a Redis script sees the whole queue atomically, so the releaser can
//!   name the waiters the rule now grants: one wake-up per grant, with no grant marks.
//!
//! A waiter whose every blocker holds is told when the first of their leases ends (a holder
//! that dies sends no message) and looks again then; any other waiter refreshes its entry every
//! third of the entry TTL (herd: every fallback poll) and is woken when its turn comes.
//!
//! Redlock runs the same scripts on each of its masters for its read-write lock, with the
//! predecessor's two-phase tickets (`service/redlock/recipe.rs`).
//!
//! **Why not Redisson's shapes.** Redisson's `RReadWriteLock` keeps one hash per lock (a mode
//! field, `read` or `write`, and a hold count per owner, each with a timeout key) and wakes
//! every waiter through one channel; readers barge in whenever the mode is `read`, so a stream
//! of readers can starve a writer. `RSemaphore` is a counter decremented by a script, released
//! with an increment and a message, with no lease: a holder that dies keeps its permit forever;
//! `RPermitExpirableSemaphore` adds a sorted set of permit ids with expiry times to fix that.
//! Neither queues, so neither has a predecessor wake-up to compare with the herd, and neither
//! grants in the FIFO order the ZooKeeper and etcd recipes do. The queue here keeps the three
//! systems comparable: the same rule, the same order, the same leases (a permit expires like
//! `RPermitExpirableSemaphore`'s), only the wake-up path differs.

use std::time::Duration;

use crate::recipe::LockError;
use crate::service::redis::recipe::scripts::{
    Keys, QueueEntry, SHARED_ACQUIRE_SCRIPT, SHARED_RELEASE_SCRIPT, SHARED_RESOLVE_SCRIPT,
    TicketMode,
};
use crate::service::redis::recipe::server::{Attempt, Server, ms};

/// How one take of a kind that shares the lock goes, beyond the lock and its owner.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedTake<'a> {
    /// How long a waiter's entry lives without a refresh.
    pub entry_ttl: Duration,
    /// A semaphore's permits (1 for a read-write lock: unused by its rule).
    pub permits: u32,
    /// The message for the waiters this take's clean-up may let in.
    pub wake: &'a str,
    /// Which ticket the take proposes or settles on (Redlock's two phases; `Propose` on one
    /// master).
    pub mode: TicketMode,
}

impl Server {
    /// One take of a read, write or permit claim by `owner` (its claim word at its end): joins
    /// the queue or refreshes its entry, and takes when the rule grants (see `SHARED_ACQUIRE`).
    pub async fn shared_acquire(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        take: &SharedTake<'_>,
        limit: Duration,
    ) -> Result<Attempt, LockError> {
        let (mode, ticket) = take.mode.args();
        let (token, ticket, hint): (u64, u64, i64) = self
            .eval(
                &SHARED_ACQUIRE_SCRIPT,
                &keys.shared(),
                &[
                    owner.into(),
                    ms(ttl).into(),
                    ms(take.entry_ttl).into(),
                    u64::from(take.permits.max(1)).into(),
                    take.wake.into(),
                    keys.lock().into(),
                    mode.into(),
                    ticket.into(),
                ],
                limit,
            )
            .await?;
        Ok(Attempt::queued(token, ticket, hint))
    }

    /// Gives back `owner`'s claim and leaves the queue, or (`QueueEntry::Keep`, a Redlock
    /// waiter's partial grant) only the claim; raises the fencing counter to `token` (0: none).
    /// True if it still held.
    pub async fn shared_release(
        &self,
        keys: &Keys,
        owner: &str,
        token: u64,
        entry: (QueueEntry, Duration),
        wake: &str,
        limit: Duration,
    ) -> Result<bool, LockError> {
        let held: i64 = self
            .eval(
                &SHARED_RELEASE_SCRIPT,
                &keys.shared(),
                &[
                    owner.into(),
                    wake.into(),
                    keys.lock().into(),
                    token.into(),
                    entry.0.word().into(),
                    ms(entry.1).into(),
                ],
                limit,
            )
            .await?;
        Ok(held == 1)
    }

    /// After a take whose answer was lost: the token if `owner` holds (renewed for `ttl`), else
    /// 0 once its entry is gone.
    pub async fn shared_resolve(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        wake: &str,
        limit: Duration,
    ) -> Result<u64, LockError> {
        self.eval(
            &SHARED_RESOLVE_SCRIPT,
            &keys.shared(),
            &[
                owner.into(),
                ms(ttl).into(),
                wake.into(),
                keys.lock().into(),
            ],
            limit,
        )
        .await
    }
}
