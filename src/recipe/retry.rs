//! Retry discipline: how long a client waits before asking a cluster again after a retryable
//! error (no leader, connection refused or reset, a read-only or loading Redis, a moved
//! ZooKeeper session, a request that went unanswered), as the clients people use do (Curator's
//! `ExponentialBackoffRetry`, etcd's client-side backoff with jitter, the AWS "equal jitter"
//! scheme): capped exponential backoff with jitter, so that a leaderless cluster is asked a
//! few times a second rather than in a busy loop, and clients that failed together do not all
//! come back at the same instant.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::recipe::LockError;
use crate::sync::LockUnpoisoned;

/// The backoff between two tries of one request within an operation's deadline.
///
/// The n-th wait (n = 0, 1, ...) is drawn uniformly from `[d/2, d]` with
/// `d = min(max, initial × 2ⁿ)`: never shorter than half the nominal step (so the request rate
/// stays bounded by `2 / initial` at first and `2 / max` once capped), never longer than it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// The nominal first wait.
    pub initial: Duration,
    /// The cap on the nominal wait.
    pub max: Duration,
}

impl Default for RetryPolicy {
    /// 50 ms doubling to 1 s: a quick second try after a blip (a leader election on these
    /// images takes 0.2–2 s), at most ~2 requests a second per client against a cluster that
    /// stays down. Curator's common choice is 1 s base; etcd's client starts at 25–50 ms.
    fn default() -> Self {
        RetryPolicy {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(1),
        }
    }
}

/// The waits of one operation's retries under a [`RetryPolicy`].
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    policy: RetryPolicy,
    tries: u32,
}

impl Backoff {
    /// A fresh backoff: the next wait is the first.
    pub(crate) fn new(policy: RetryPolicy) -> Backoff {
        Backoff { policy, tries: 0 }
    }

    /// The nominal wait of the next try, before jitter.
    fn nominal(&self) -> Duration {
        let factor = 1u32.checked_shl(self.tries.min(20)).unwrap_or(u32::MAX);
        self.policy
            .initial
            .saturating_mul(factor)
            .min(self.policy.max.max(self.policy.initial))
    }

    /// The next wait, drawn with `rng`; each call moves on one step.
    pub(crate) fn next_with(&mut self, rng: &mut impl Rng) -> Duration {
        let d = self.nominal();
        self.tries = self.tries.saturating_add(1);
        let half = d / 2;
        let spread = (d - half).as_nanos() as u64;
        half + Duration::from_nanos(if spread == 0 {
            0
        } else {
            rng.random_range(0..=spread)
        })
    }

    /// Sleeps the next wait and says true, unless that would reach `until`: then it sleeps
    /// until `until` and says false (no time for another try), so that an operation gives up
    /// at its deadline, not a backoff step before it.
    pub(crate) async fn wait(&mut self, until: Instant) -> bool {
        let pause = self.next_with(&mut rand::rng());
        if Instant::now() + pause >= until {
            tokio::time::sleep_until(until.into()).await;
            return false;
        }
        tokio::time::sleep(pause).await;
        true
    }
}

/// Runs `op` until it succeeds, fails with an error that is not retryable, or `until` comes
/// (then with its last error), waiting out `policy`'s backoff between tries: how a request
/// outside the lock cycles (listing or removing a target's keys after a run's faults) rides out
/// a leader election rather than failing the run on its first "leader changed". `op` must be
/// safe to repeat (a read, or a write whose second application changes nothing). Says how many
/// tries it made.
pub(crate) async fn retrying<T, Fut>(
    policy: RetryPolicy,
    until: Instant,
    mut op: impl FnMut() -> Fut,
) -> (Result<T, LockError>, u32)
where
    Fut: std::future::Future<Output = Result<T, LockError>>,
{
    let mut backoff = Backoff::new(policy);
    let mut tries = 0;
    loop {
        tries += 1;
        match op().await {
            Err(e) if e.is_retryable() && backoff.wait(until).await => {}
            r => return (r, tries),
        }
    }
}

/// The writes of one acquisition that went unanswered across its tries: under which sessions
/// or leases (ids), and the last error. An acquisition that fails in the end with any of them
/// must withdraw them before it can say it does not hold the lock.
#[derive(Debug, Default)]
pub(crate) struct Unanswered {
    ids: Mutex<Vec<i64>>,
    last: Mutex<Option<LockError>>,
}

impl Unanswered {
    /// A write under session or lease `id` went unanswered with `e`.
    pub(crate) fn note(&self, id: i64, e: &LockError) {
        let mut ids = self.ids.locked();
        if !ids.contains(&id) {
            ids.push(id);
        }
        *self.last.locked() = Some(e.clone());
    }

    /// The sessions or leases noted, in order.
    pub(crate) fn ids(&self) -> Vec<i64> {
        self.ids.locked().clone()
    }

    /// The last unanswered error, if any write went unanswered.
    pub(crate) fn last(&self) -> Option<LockError> {
        self.last.locked().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A quick policy, so the tests below wait milliseconds.
    const QUICK: RetryPolicy = RetryPolicy {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(4),
    };

    #[tokio::test]
    async fn retrying_asks_again_through_retryable_errors_until_an_answer() {
        let mut answers = vec![
            Err(LockError::Unavailable("etcdserver: no leader".into())),
            Err(LockError::Connection("etcdserver: leader changed".into())),
            Ok(7),
        ]
        .into_iter();
        let until = Instant::now() + Duration::from_secs(5);
        let (r, tries) =
            retrying(QUICK, until, || std::future::ready(answers.next().unwrap())).await;
        assert_eq!(r.unwrap(), 7);
        assert_eq!(tries, 3);
    }

    #[tokio::test]
    async fn retrying_stops_at_an_error_that_is_not_retryable() {
        let mut calls = 0;
        let until = Instant::now() + Duration::from_secs(5);
        let (r, tries) = retrying(QUICK, until, || {
            calls += 1;
            std::future::ready(Err::<(), _>(LockError::Server("permission denied".into())))
        })
        .await;
        assert!(matches!(r, Err(LockError::Server(_))), "{r:?}");
        assert_eq!((tries, calls), (1, 1));
    }

    #[tokio::test]
    async fn retrying_gives_up_at_its_deadline_with_the_last_error() {
        let started = Instant::now();
        let until = started + Duration::from_millis(60);
        let mut n = 0;
        let (r, tries) = retrying(QUICK, until, || {
            n += 1;
            std::future::ready(Err::<(), _>(LockError::Unavailable(format!("try {n}"))))
        })
        .await;
        assert!(started.elapsed() >= Duration::from_millis(60));
        assert!(tries >= 2, "{tries}");
        match r {
            Err(LockError::Unavailable(why)) => assert_eq!(why, format!("try {tries}")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn waits_double_from_the_initial_one_up_to_the_cap_with_jitter_in_the_upper_half() {
        let policy = RetryPolicy {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(1),
        };
        let mut b = Backoff::new(policy);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        // Nominal 50, 100, 200, 400, 800, then 1000 for ever.
        let nominal = [50u64, 100, 200, 400, 800, 1000, 1000, 1000];
        for (i, n) in nominal.iter().enumerate() {
            let w = b.next_with(&mut rng).as_millis() as u64;
            assert!(
                w >= n / 2 && w <= *n,
                "try {i}: {w} ms outside [{}, {n}]",
                n / 2
            );
        }
        // Jitter: 200 capped draws are not all the same.
        let draws: std::collections::HashSet<u128> = (0..200)
            .map(|_| b.next_with(&mut rng).as_micros())
            .collect();
        assert!(draws.len() > 100, "{} distinct waits", draws.len());
    }

    #[test]
    fn the_rate_stays_bounded_however_long_the_outage() {
        // 20 s of an outage with the default policy: count the tries as a client would.
        let mut b = Backoff::new(RetryPolicy::default());
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let (mut t, mut tries) = (Duration::ZERO, 0);
        while t < Duration::from_secs(20) {
            t += b.next_with(&mut rng);
            tries += 1;
        }
        // At least 0.5 s apart once capped: at most 40 + the few quick first ones.
        assert!((20..=46).contains(&tries), "{tries} tries in 20 s");
    }

    #[tokio::test]
    async fn wait_gives_up_at_the_deadline_not_past_it() {
        let mut b = Backoff::new(RetryPolicy {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(5),
        });
        let started = Instant::now();
        assert!(!b.wait(started + Duration::from_millis(100)).await);
        // It gave up at the deadline: not before, and not a 5 s step later.
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(100) && waited < Duration::from_secs(1),
            "{waited:?}"
        );
        let mut quick = Backoff::new(RetryPolicy {
            initial: Duration::from_millis(2),
            max: Duration::from_millis(2),
        });
        assert!(quick.wait(Instant::now() + Duration::from_secs(5)).await);
    }

    #[test]
    fn a_cap_below_the_initial_wait_keeps_the_initial_one() {
        let mut b = Backoff::new(RetryPolicy {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(10),
        });
        let w = b.next_with(&mut rand::rngs::StdRng::seed_from_u64(3));
        assert!(w >= Duration::from_millis(50) && w <= Duration::from_millis(100));
    }
}
