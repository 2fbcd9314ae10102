//! Deadlines for the network calls of one lock operation: every request gets at most
//! `request_timeout`, and never more than what is left of the operation's deadline.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use super::LockError;
use super::retry::{Backoff, RetryPolicy};

/// The clock-drift allowance of every recipe's lost signal (the Redlock spec's 1 % of the TTL +
/// 2 ms): our timer and the server's may run at slightly different rates, and ours may fire a
/// little late, so the holder is told this much before the TTL ends by our clock.
pub(crate) fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// The time budget of one `acquire` or `release`.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    key: String,
    started: Instant,
    deadline: Instant,
    request_timeout: Duration,
    /// Acquisitions report a passed deadline as [`LockError::Timeout`]; releases, which have no
    /// caller deadline, report a slow server as a connection problem.
    acquiring: bool,
    /// How requests within this budget are tried again after a retryable error.
    retry: RetryPolicy,
    /// A try-lock (`acquire_timeout = "0s"`): the deadline had passed when the acquisition
    /// began, so each of its requests still gets `request_timeout`, but nothing waits for a
    /// release and nothing is retried.
    try_once: bool,
}

impl Budget {
    /// The budget of an acquisition that must finish by `deadline`.
    /// A deadline already passed makes it a try-lock's: one try of each request, no wait.
    pub(crate) fn acquire(key: &str, deadline: Instant, request_timeout: Duration) -> Budget {
        let started = Instant::now();
        Budget {
            key: key.to_string(),
            started,
            deadline,
            request_timeout,
            acquiring: true,
            retry: RetryPolicy::default(),
            try_once: deadline <= started,
        }
    }

    /// The budget of a release or a clean-up: `requests` round trips of `request_timeout`.
    pub(crate) fn cleanup(key: &str, request_timeout: Duration, requests: u32) -> Budget {
        let now = Instant::now();
        Budget {
            key: key.to_string(),
            started: now,
            deadline: now + request_timeout * requests,
            request_timeout,
            acquiring: false,
            retry: RetryPolicy::default(),
            try_once: false,
        }
    }

    /// The same budget, retrying as `retry` says.
    pub(crate) fn retrying(self, retry: RetryPolicy) -> Budget {
        Budget { retry, ..self }
    }

    /// A fresh backoff for one request's retries within this budget.
    pub(crate) fn backoff(&self) -> Backoff {
        Backoff::new(self.retry)
    }

    /// When the operation must be over.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The error for a passed deadline.
    pub(crate) fn timeout(&self) -> LockError {
        if self.acquiring {
            LockError::Timeout {
                key: self.key.clone(),
                waited: self.started.elapsed(),
            }
        } else {
            LockError::Connection(format!(
                "no answer about '{}' within {:?}: check that the cluster is reachable, or raise \
                 request_timeout",
                self.key,
                self.started.elapsed()
            ))
        }
    }

    /// Runs a call that waits by design (the server-side Lock RPC) until the deadline, not
    /// just one request timeout.
    pub(crate) async fn run_blocking<T, E, F>(&self, fut: F) -> Result<Result<T, E>, LockError>
    where
        F: Future<Output = Result<T, E>>,
    {
        tokio::time::timeout_at(self.deadline.into(), fut)
            .await
            .map_err(|_| self.timeout())
    }

    /// Runs one request under `min(request_timeout, time left)`. The outer error is the
    /// deadline; the inner result is the server's answer, for the caller to interpret.
    pub(crate) async fn run<T, E, F>(&self, what: &str, fut: F) -> Result<Result<T, E>, LockError>
    where
        F: Future<Output = Result<T, E>>,
        E: fmt::Display,
    {
        let left = match self.try_once {
            true => self.request_timeout,
            false => self.deadline.saturating_duration_since(Instant::now()),
        };
        let limit = left.min(self.request_timeout);
        match tokio::time::timeout(limit, fut).await {
            Ok(r) => Ok(r),
            Err(_) if left <= self.request_timeout => Err(self.timeout()),
            Err(_) => Err(LockError::Connection(format!(
                "{what} on '{}' got no answer within {:?}: check that the cluster is reachable, \
                 or raise request_timeout",
                self.key, self.request_timeout
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_is_the_redlock_allowance() {
        assert_eq!(drift(Duration::from_secs(10)), Duration::from_millis(102));
        assert_eq!(drift(Duration::from_secs(2)), Duration::from_millis(22));
    }

    #[tokio::test]
    async fn a_try_lock_budget_sends_its_requests_but_waits_for_nothing() {
        let ok = || async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok::<_, String>(())
        };
        let now = Budget::acquire("k", Instant::now(), Duration::from_secs(1));
        // The request runs to its answer although the deadline has passed ...
        assert!(matches!(now.run("get", ok()).await, Ok(Ok(()))));
        // ... but a wait for a release ends at once, and no retry is allowed.
        assert!(now.deadline() <= Instant::now());
        assert!(!now.backoff().wait(now.deadline()).await);
        let slow = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<(), String>(())
        };
        let short = Budget::acquire("k", Instant::now(), Duration::from_millis(20));
        assert!(matches!(
            short.run("get", slow).await,
            Err(LockError::Timeout { .. })
        ));
    }

    #[tokio::test]
    async fn a_slow_request_is_a_timeout_only_when_the_deadline_passes() {
        let slow = || tokio::time::sleep(Duration::from_secs(5));
        let ok = || async { Ok::<_, String>(()) };
        let wrap = |f: tokio::time::Sleep| async move {
            f.await;
            Ok::<(), String>(())
        };
        let near = Budget::acquire(
            "k",
            Instant::now() + Duration::from_millis(20),
            Duration::from_secs(1),
        );
        assert!(matches!(
            near.run("get", wrap(slow())).await,
            Err(LockError::Timeout { .. })
        ));
        let far = Budget::acquire(
            "k",
            Instant::now() + Duration::from_secs(60),
            Duration::from_millis(20),
        );
        assert!(matches!(
            far.run("get", wrap(slow())).await,
            Err(LockError::Connection(_))
        ));
        assert!(matches!(far.run("get", ok()).await, Ok(Ok(()))));
        let release = Budget::cleanup("k", Duration::from_millis(20), 1);
        let e = release.run("delete", wrap(slow())).await.unwrap_err();
        assert!(matches!(e, LockError::Connection(_)), "{e:?}");
        assert!(
            e.to_string().contains("request_timeout"),
            "the message names the fix: {e}"
        );
    }
}
