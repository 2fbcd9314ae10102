//! What every system's floor probe shares ([`super::LockService::floor`]): the sample loop,
//! each sample under a deadline, failures counted and the probe given up when nothing works.

use std::future::Future;
use std::time::Duration;

use crate::results::floor::FloorSamples;

/// How long one sample may take (its set-up, the handoff and its clean-up).
pub(super) const SAMPLE_DEADLINE: Duration = Duration::from_secs(5);
/// How long one request of a probe's set-up (a connection, a subscription) may take.
pub(super) const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// The probe gives up after this many failures in a row before any success.
const GIVE_UP_AFTER: usize = 5;

/// Samples run first and left out of the floor: a server just started is slower for its first
/// requests than it is by the time the cells run. A JVM (ZooKeeper) compiles its hot paths
/// only after hundreds of requests: its floor fell from 3.4–3.9 ms to 2.4–2.7 ms p50 between 50
/// and 300 warm-up samples here, so a probe says how many it needs.
pub(super) const WARMUP: usize = 50;

/// `one(i)` for `i` in `0..warmup + samples`, each within [`SAMPLE_DEADLINE`]: past the first
/// `warmup`, the durations of those that completed and the count of those that did not.
/// `Err` (the last failure) when the first [`GIVE_UP_AFTER`] all failed: the cluster does not
/// answer, and 200 more would not help.
pub(super) async fn sample_each<F, Fut>(
    warmup: usize,
    samples: usize,
    mut one: F,
) -> Result<FloorSamples, String>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<Duration, String>>,
{
    let mut out = FloorSamples {
        warmup: warmup as u64,
        ..FloorSamples::default()
    };
    let mut any_ok = false;
    for i in 0..warmup + samples {
        let done = match tokio::time::timeout(SAMPLE_DEADLINE, one(i)).await {
            Ok(done) => done,
            Err(_) => Err(format!("a sample took over {SAMPLE_DEADLINE:?}")),
        };
        let measured = i >= warmup;
        match done {
            Ok(t) => {
                any_ok = true;
                if measured {
                    out.times.push(t);
                }
            }
            Err(why) => {
                if measured {
                    out.failed += 1;
                }
                if !any_ok && i + 1 >= GIVE_UP_AFTER {
                    return Err(why);
                }
            }
        }
    }
    Ok(out)
}

/// One timed handoff: A's `release` and B's `chain` (B learns of the release and takes the
/// lock) run together from now; the time is from now to the end of B's `chain`, as a cell's
/// handoff ends at the next holder's grant. A's own reply may come later (A's server applying
/// the release after B's) and is not part of the handoff; both outcomes are returned.
pub(super) async fn timed_handoff<A: Future, B: Future>(
    release: A,
    chain: B,
) -> (A::Output, B::Output, Duration) {
    let start = std::time::Instant::now();
    let (released, (taken, took)) = tokio::join!(release, async {
        let taken = chain.await;
        (taken, start.elapsed())
    });
    (released, taken, took)
}

/// `f` within [`REQUEST_DEADLINE`], its error (or the deadline) as text naming `what`.
pub(super) async fn within<T, E: std::fmt::Display>(
    what: &str,
    f: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(REQUEST_DEADLINE, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {REQUEST_DEADLINE:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A's reply coming long after B's chain ended does not lengthen the sample: B's chain
    /// takes 5 ms, A's 400 ms (timed to A as well, the sample would be at least 400 ms).
    #[tokio::test]
    async fn a_handoff_is_timed_to_the_end_of_bs_chain_not_as_reply() {
        let (released, taken, took) = timed_handoff(
            async {
                tokio::time::sleep(Duration::from_millis(400)).await;
                "A"
            },
            async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                "B"
            },
        )
        .await;
        assert_eq!((released, taken), ("A", "B"));
        assert!(took >= Duration::from_millis(5), "{took:?}");
        assert!(took < Duration::from_millis(400), "{took:?}");
    }

    #[tokio::test]
    async fn failures_are_counted_and_a_probe_that_never_works_gives_up_early() {
        let got = sample_each(WARMUP, 6, |i| async move {
            if i < WARMUP {
                Ok(Duration::from_secs(9))
            } else if i % 2 == 0 {
                Ok(Duration::from_millis(i as u64))
            } else {
                Err("odd".to_string())
            }
        })
        .await
        .unwrap();
        // The warm-up's slow samples are left out, and said so.
        assert_eq!(got.times.len(), 3);
        assert!(got.times.iter().all(|t| *t < Duration::from_secs(9)));
        assert_eq!((got.failed, got.warmup), (3, WARMUP as u64));
        let mut tried = 0;
        let never = sample_each(WARMUP, 200, |_| {
            tried += 1;
            async { Err::<Duration, _>("refused".to_string()) }
        })
        .await;
        assert_eq!(never, Err("refused".to_string()));
        assert_eq!(tried, 5, "gave up after five failures in a row");
    }
}
