//! Two textbook Redis lock mistakes, offered as the `unsafe-*` strategies of the Sentinel recipe
//! (unsafe, for calibration: they show that the safety checkers find what is there, on a real
//! server with no fault at all, and never run unless named).
//!
//! - **`unsafe-del`**: acquire as the herd does (`SET NX PX` with a random value, the watchdog,
//!   the lost signal, the fencing `INCR`), but release with a plain `DEL key`, no owner check.
//!   A holder whose key expired (no renewal, a hold longer than the TTL) deletes whoever holds
//!   the key now, and a third client is granted the lock while that one still holds it.
//! - **`unsafe-setnx-expire`**: `SETNX key value`, then `PEXPIRE key ttl` as a second command.
//!   A client that dies between the two leaves a key with no TTL that nobody ever deletes: the
//!   lock is unavailable for good. `RecipeConfig::crash_between_steps_every` makes that death
//!   happen without a fault injector.
//! - **`unsafe-get-set`** (semaphores only): the holder count is read with `GET` and, when below
//!   the permits, written back plus one with `SET`, as a second command; the release `DECR`s it
//!   and tells the herd. Clients that read the same count all take a permit, and each such race
//!   loses an increment for good (their releases each decrement), so the count drifts below the
//!   holders and ever more of them hold at once. No lease either: a holder that dies keeps its
//!   permit forever (nothing to renew; its lease never ends early).
//!
//! Plain commands, not scripts: being non-atomic or unchecked is the point.

use std::time::Duration;

use crate::recipe::LockError;
use crate::service::redis::recipe::scripts::Keys;
use crate::service::redis::recipe::server::{Attempt, Server};

fn ms(d: Duration) -> u64 {
    d.as_millis().max(1) as u64
}

/// The error a simulated crash between `SETNX` and `PEXPIRE` reports: a connection problem (an
/// unknown outcome, `info` in the history), as a client that died there could report nothing
/// better.
pub(crate) fn simulated_crash(key: &str, acquisition: u64, every: u32) -> LockError {
    LockError::Connection(format!(
        "simulated crash between SETNX and PEXPIRE on '{key}' (acquisition {acquisition} of this \
         client, crash_between_steps_every = {every}): the key is left with no TTL"
    ))
}

/// Whether a client's `n`-th acquisition (from 1) dies between its steps: every `every`-th does;
/// `every` = 0 never.
pub(crate) fn crashes_between_steps(n: u64, every: u32) -> bool {
    every > 0 && n.is_multiple_of(u64::from(every))
}

impl Server {
    /// Step one of `unsafe-setnx-expire`: `SETNX key owner`, with the key's `PTTL` in the same
    /// round trip so a loser knows how long to wait. True when the key was set (it has no TTL
    /// yet); otherwise the answer carries the holder's remaining TTL, `None` when the key has
    /// none (only a release message or the fallback poll can help then).
    pub async fn setnx(
        &self,
        keys: &Keys,
        owner: &str,
        limit: Duration,
    ) -> Result<(bool, Attempt), LockError> {
        let mut pipe = ::redis::pipe();
        pipe.cmd("SETNX").arg(keys.lock()).arg(owner);
        pipe.cmd("PTTL").arg(keys.lock());
        let (set, pttl): (i64, i64) = self.query_pipe(&pipe, limit).await?;
        Ok((
            set == 1,
            Attempt {
                token: 0,
                ticket: None,
                retry_within: match pttl {
                    -1 => None,
                    p => Some(Duration::from_millis(p.max(0) as u64)),
                },
                holder: None,
            },
        ))
    }

    /// Step two of `unsafe-setnx-expire`: `PEXPIRE key ttl`, then the fencing `INCR`, in one
    /// round trip. Returns the token. Refuses (a server error) if the key was gone before the
    /// `PEXPIRE`, which only a plain `DEL` by someone else can cause.
    pub async fn expire_and_fence(
        &self,
        keys: &Keys,
        ttl: Duration,
        limit: Duration,
    ) -> Result<u64, LockError> {
        let mut pipe = ::redis::pipe();
        pipe.cmd("PEXPIRE").arg(keys.lock()).arg(ms(ttl));
        pipe.cmd("INCR").arg(keys.fence());
        let (expired, token): (i64, u64) = self.query_pipe(&pipe, limit).await?;
        if expired == 1 {
            Ok(token)
        } else {
            Err(LockError::Server(format!(
                "{}: '{}' vanished between SETNX and PEXPIRE",
                self.endpoint(),
                keys.lock()
            )))
        }
    }

    /// The `unsafe-del` release: `DEL key` whoever holds it, then `wake` to the herd waiters, in
    /// one round trip. True if a key was deleted (ours, or the next holder's).
    pub async fn del_unchecked(
        &self,
        keys: &Keys,
        wake: &str,
        limit: Duration,
    ) -> Result<bool, LockError> {
        let mut pipe = ::redis::pipe();
        pipe.cmd("DEL").arg(keys.lock());
        pipe.cmd("PUBLISH").arg(keys.released_channel()).arg(wake);
        let (deleted, _listeners): (i64, i64) = self.query_pipe(&pipe, limit).await?;
        Ok(deleted == 1)
    }
}

impl Server {
    /// Step one of an `unsafe-get-set` take: the holder count, `GET`.
    pub async fn count_get(&self, keys: &Keys, limit: Duration) -> Result<i64, LockError> {
        let mut cmd = ::redis::cmd("GET");
        cmd.arg(keys.count());
        let n: Option<i64> = self.query(&cmd, limit).await?;
        Ok(n.unwrap_or(0))
    }

    /// Step two of an `unsafe-get-set` take: `SET count value` (what step one read, plus one)
    /// and the fencing `INCR`, in one round trip. Returns the token.
    pub async fn count_set_and_fence(
        &self,
        keys: &Keys,
        value: i64,
        limit: Duration,
    ) -> Result<u64, LockError> {
        let mut pipe = ::redis::pipe();
        pipe.cmd("SET").arg(keys.count()).arg(value).ignore();
        pipe.cmd("INCR").arg(keys.fence());
        let (token,): (u64,) = self.query_pipe(&pipe, limit).await?;
        Ok(token)
    }

    /// The `unsafe-get-set` release: `DECR count`, then `wake` to the herd waiters, in one
    /// round trip.
    pub async fn count_release(
        &self,
        keys: &Keys,
        wake: &str,
        limit: Duration,
    ) -> Result<(), LockError> {
        let mut pipe = ::redis::pipe();
        pipe.cmd("DECR").arg(keys.count());
        pipe.cmd("PUBLISH").arg(keys.released_channel()).arg(wake);
        let (_count, _listeners): (i64, i64) = self.query_pipe(&pipe, limit).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth_acquisition_crashes_and_zero_never() {
        let crashed: Vec<u64> = (1..=10).filter(|&n| crashes_between_steps(n, 4)).collect();
        assert_eq!(crashed, vec![4, 8]);
        assert!((1..=10).all(|n| crashes_between_steps(n, 1)));
        assert!((1..=1000).all(|n| !crashes_between_steps(n, 0)));
        let e = simulated_crash("k", 20, 20);
        assert!(e.is_indeterminate());
        assert!(
            e.to_string()
                .contains("simulated crash between SETNX and PEXPIRE"),
            "{e}"
        );
    }
}
