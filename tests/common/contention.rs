//! The contention harness the recipe tests share: N clients take the same lock M times each,
//! increment a register non-atomically inside the critical section, and record every hold.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockbench::recipe::{Recipe, Strategy, Tally};
use rand::Rng;

/// One critical section as the holder saw it.
#[derive(Debug, Clone)]
pub struct Hold {
    pub client: usize,
    pub token: u64,
    /// When this client started waiting (acquire called).
    pub started: Instant,
    pub queue_position: Option<u64>,
    pub acquired: Instant,
    pub released: Instant,
    /// `None` where the recipe cannot see its wake-ups (etcd native).
    pub wakeups: Option<u64>,
    /// Of `wakeups`, those a queue's correction sent, not a release (`Tally::queue_wakeups`).
    pub queue_wakeups: u64,
    pub requests: u64,
    pub fallback_polls: u64,
    pub acquire_latency: Duration,
}

/// What a contention run produced.
#[derive(Debug)]
pub struct Outcome {
    pub holds: Vec<Hold>,
    pub register: u64,
    pub errors: Vec<String>,
    pub elapsed: Duration,
}

impl Outcome {
    /// Asserts what every contention run must show: no errors, exactly `expected` increments
    /// of the register (no lost update), no overlapping holds, and fencing tokens that grow
    /// with every grant.
    pub fn assert_exclusive(&self, label: &str, expected: u64) {
        assert!(self.errors.is_empty(), "{label}: errors {:?}", self.errors);
        assert_eq!(
            self.register, expected,
            "{label}: lost updates, mutual exclusion broken"
        );
        assert!(
            self.overlaps().is_empty(),
            "{label}: overlapping holds {:?}",
            self.overlaps().first()
        );
        assert_eq!(
            self.token_regressions(),
            0,
            "{label}: fencing tokens must grow with every grant"
        );
    }
    /// Pairs of holds whose intervals overlap (sorted by acquisition).
    pub fn overlaps(&self) -> Vec<(Hold, Hold)> {
        let mut h = self.holds.clone();
        h.sort_by_key(|x| x.acquired);
        h.windows(2)
            .filter(|w| w[1].acquired < w[0].released)
            .map(|w| (w[0].clone(), w[1].clone()))
            .collect()
    }
    /// Mean wake-ups per hold; panics if a recipe that should see its wake-ups did not.
    pub fn mean_wakeups(&self) -> f64 {
        self.holds
            .iter()
            .map(|h| h.wakeups.expect("this recipe reports its wake-ups") as f64)
            .sum::<f64>()
            / self.holds.len().max(1) as f64
    }
    /// Holds granted while their client was already waiting when the previous holder let go,
    /// each with that handoff's latency (the previous release → this grant): the acquisitions
    /// a wake-up, not an idle lock, must have served.
    pub fn handoffs(&self) -> Vec<(Hold, Duration)> {
        let mut h = self.holds.clone();
        h.sort_by_key(|x| x.acquired);
        h.windows(2)
            .filter(|w| w[1].started < w[0].released)
            .map(|w| {
                (
                    w[1].clone(),
                    w[1].acquired.saturating_duration_since(w[0].released),
                )
            })
            .collect()
    }
    /// Mean wake-ups over the handed-off holds (`None` when there was no handoff).
    pub fn wakeups_per_handoff(&self) -> Option<f64> {
        let h = self.handoffs();
        (!h.is_empty()).then(|| {
            h.iter()
                .map(|(x, _)| x.wakeups.expect("this recipe reports its wake-ups") as f64)
                .sum::<f64>()
                / h.len() as f64
        })
    }
    /// Wake-ups over the handed-off holds beyond one each, and the queue's corrections
    /// (`Hold::queue_wakeups`) over all holds: `(excess, corrections)`.
    pub fn excess_wakeups(&self) -> (i64, u64) {
        let h = self.handoffs();
        let woken: u64 = h
            .iter()
            .map(|(x, _)| x.wakeups.expect("this recipe reports its wake-ups"))
            .sum();
        let corrections = self.holds.iter().map(|x| x.queue_wakeups).sum();
        (woken as i64 - h.len() as i64, corrections)
    }
    /// The `q` quantile of handoff latency.
    pub fn handoff_percentile(&self, q: f64) -> Duration {
        let mut l: Vec<Duration> = self.handoffs().into_iter().map(|(_, d)| d).collect();
        l.sort();
        if l.is_empty() {
            return Duration::ZERO;
        }
        l[((l.len() - 1) as f64 * q).round() as usize]
    }
    pub fn total_fallback_polls(&self) -> u64 {
        self.holds.iter().map(|h| h.fallback_polls).sum()
    }
    pub fn mean_requests(&self) -> f64 {
        self.holds.iter().map(|h| h.requests as f64).sum::<f64>() / self.holds.len().max(1) as f64
    }
    /// Holds whose queue position is below that of the hold granted before them (FIFO broken).
    pub fn fifo_violations(&self) -> usize {
        let mut h = self.holds.clone();
        h.sort_by_key(|x| x.acquired);
        h.windows(2)
            .filter(|w| match (w[0].queue_position, w[1].queue_position) {
                (Some(a), Some(b)) => b < a,
                _ => false,
            })
            .count()
    }
    /// Fencing tokens must grow with every grant.
    pub fn token_regressions(&self) -> usize {
        let mut h = self.holds.clone();
        h.sort_by_key(|x| x.acquired);
        h.windows(2).filter(|w| w[1].token <= w[0].token).count()
    }
    pub fn throughput(&self) -> f64 {
        self.holds.len() as f64 / self.elapsed.as_secs_f64()
    }
    pub fn latency_percentile(&self, q: f64) -> Duration {
        let mut l: Vec<Duration> = self.holds.iter().map(|h| h.acquire_latency).collect();
        l.sort();
        if l.is_empty() {
            return Duration::ZERO;
        }
        l[((l.len() - 1) as f64 * q).round() as usize]
    }
    pub fn summary(&self, label: &str) -> String {
        format!(
            "{label}: {} acquisitions in {:.2} s = {:.1}/s, p50 {:?}, p99 {:?}, wakeups/acq {}, requests/acq {:.2}, errors {}",
            self.holds.len(),
            self.elapsed.as_secs_f64(),
            self.throughput(),
            self.latency_percentile(0.5),
            self.latency_percentile(0.99),
            if self.holds.iter().all(|h| h.wakeups.is_some()) {
                format!("{:.2}", self.mean_wakeups())
            } else {
                "n/a".to_string()
            },
            self.mean_requests(),
            self.errors.len()
        )
    }
}

/// Runs `clients.len()` clients, each acquiring `key` `per_client` times and holding 1-5 ms.
pub async fn contend<R: Recipe>(
    clients: Vec<R>,
    key: &str,
    strategy: Strategy,
    per_client: usize,
) -> Outcome {
    let register = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, r) in clients.into_iter().enumerate() {
        let register = register.clone();
        let key = key.to_string();
        tasks.push(tokio::spawn(async move {
            let mut holds = Vec::new();
            let mut errors = Vec::new();
            for _ in 0..per_client {
                let t0 = Instant::now();
                let tally = Tally::default();
                match r
                    .acquire_counted(&key, strategy, t0 + Duration::from_secs(60), &tally)
                    .await
                {
                    Ok(lease) => {
                        let acquired = Instant::now();
                        // Non-atomic read-modify-write: only mutual exclusion keeps it exact.
                        let v = register.load(Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        let hold_ms = rand::rng().random_range(1..=5);
                        tokio::time::sleep(Duration::from_millis(hold_ms)).await;
                        register.store(v + 1, Ordering::SeqCst);
                        let released = Instant::now();
                        let hold = Hold {
                            client: i,
                            token: lease.token,
                            started: t0,
                            queue_position: lease.queue_position,
                            acquired,
                            released,
                            wakeups: lease.wakeups,
                            queue_wakeups: tally.queue_wakeup_count(),
                            requests: lease.requests,
                            fallback_polls: lease.fallback_polls,
                            acquire_latency: acquired - t0,
                        };
                        if let Err(e) = r.release(lease).await {
                            errors.push(format!("release: {e}"));
                        }
                        holds.push(hold);
                    }
                    Err(e) => errors.push(format!("acquire: {e}")),
                }
            }
            r.crash().await;
            (holds, errors)
        }));
    }
    let mut holds = Vec::new();
    let mut errors = Vec::new();
    for t in tasks {
        let (h, e) = t.await.expect("client task panicked");
        holds.extend(h);
        errors.extend(e);
    }
    Outcome {
        holds,
        register: register.load(Ordering::SeqCst),
        errors,
        elapsed: started.elapsed(),
    }
}
