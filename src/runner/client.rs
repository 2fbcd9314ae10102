//! One lock client's loop: choose a key, acquire, hold, release, think; every step lands in the
//! history as invoke/ok/fail/info events on the run's one clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Barrier;

use crate::history::{Event, EventKind, HistoryHandle, Op};
use crate::recipe::{Recipe, Strategy};
use crate::spec::{Stop, Workload};
use crate::workload::distribution::{KeyChooser, client_rng};
use crate::workload::pace;

/// What every client of a cell shares.
pub(crate) struct CellShared {
    pub workload: Workload,
    pub strategy: Strategy,
    pub history: HistoryHandle,
    /// When the cell's clock started (t_us = 0).
    pub started: Instant,
    /// Acquisitions granted so far, for `Stop::Acquisitions`.
    pub granted: AtomicU64,
    /// Stampede rounds: every client waits here, all are released at once.
    pub barrier: Option<Barrier>,
}

impl CellShared {
    fn done(&self) -> bool {
        match self.workload.stop {
            Stop::Duration(d) => self.started.elapsed() >= d,
            Stop::Acquisitions(n) => self.granted.load(Ordering::Relaxed) >= n,
        }
    }

    fn record(&self, ev: Event) {
        // The recorder only fails when its writer is gone; the cell then fails at finish().
        let _ = self.history.record(ev);
    }

    fn now_us(&self) -> u64 {
        self.history.now_us()
    }

    /// Now, as an instant (to time a wait from) and as the history timestamp of that instant,
    /// so a requested hold or think is measured from exactly where the history says it began.
    fn stamp(&self) -> (Instant, u64) {
        let now = Instant::now();
        (now, self.history.clock().us_at(now))
    }
}

/// Runs client `id` until the cell's stop condition holds.
pub(crate) async fn drive<R: Recipe>(recipe: R, id: u32, shared: Arc<CellShared>) -> R {
    let wl = &shared.workload;
    let mut rng = client_rng(wl.seed, id);
    let keys = KeyChooser::new(wl.keys, wl.key_distribution);
    let rounds = wl.stampede.map(|s| s.rounds as u64);
    let mut n: u64 = 0;
    // The think time just waited, to be recorded on the acquire invoke that follows it.
    let mut thought: Option<Duration> = None;
    loop {
        if let Some(r) = rounds {
            if n >= r {
                break;
            }
            if let Some(b) = &shared.barrier {
                b.wait().await;
            }
            // The barrier, not the think time, decided when this acquisition starts.
            thought = None;
        } else if shared.done() {
            break;
        }
        let key = KeyChooser::key_name(keys.choose(&mut rng));
        let intended = wl.intended_start(id, n).map(|d| shared.started + d);
        if let Some(at) = intended {
            if let Stop::Duration(d) = wl.stop
                && at >= shared.started + d
            {
                break;
            }
            pace::sleep_until(at).await;
        }
        let ended = one_cycle(&recipe, id, &key, intended, thought, &shared, &mut rng).await;
        n += 1;
        if wl.arrival == crate::spec::Arrival::Closed {
            let think = wl.think.sample(&mut rng);
            // Counted from the outcome the history shows last, so the recorded think is the
            // gap between that event and the next invoke. A zero think does not wait at all.
            pace::sleep_until(ended + think).await;
            thought = Some(think);
        }
    }
    recipe
}

/// One acquire–hold–release cycle; returns the instant of its last recorded outcome.
async fn one_cycle<R: Recipe>(
    recipe: &R,
    id: u32,
    key: &str,
    intended: Option<Instant>,
    thought: Option<Duration>,
    shared: &CellShared,
    rng: &mut rand::rngs::StdRng,
) -> Instant {
    let wl = &shared.workload;
    let mut invoke = Event::new(shared.now_us(), id, EventKind::Invoke, Op::Acquire, key);
    invoke.intended_us =
        intended.map(|t| t.saturating_duration_since(shared.started).as_micros() as u64);
    invoke.think_us = thought.map(|d| d.as_micros() as u64);
    shared.record(invoke);
    let deadline = Instant::now() + wl.acquire_timeout;
    let lease = match recipe.acquire(key, shared.strategy, deadline).await {
        Ok(lease) => lease,
        Err(e) => {
            let (at, t_us) = shared.stamp();
            shared.record(Event::from_error(t_us, id, Op::Acquire, key, &e));
            return at;
        }
    };
    shared.granted.fetch_add(1, Ordering::Relaxed);
    let (granted_at, granted_us) = shared.stamp();
    let mut ok = Event::new(granted_us, id, EventKind::Ok, Op::Acquire, key);
    ok.token = Some(lease.token);
    ok.wakeups = Some(lease.wakeups);
    ok.requests = Some(lease.requests);
    ok.queue_position = lease.queue_position;
    ok.ttl_ms = Some(lease.ttl.as_millis() as u64);
    shared.record(ok);

    // Hold for the sampled time, counted from the `ok` stamp; if the lease is lost meanwhile,
    // say so (the holder, like a real one, finishes its critical section: that is what a
    // checker must catch).
    let hold = wl.hold.sample(rng);
    let mut lost = lease.lost.clone();
    if hold.is_zero() {
        // Not even a yield: a zero hold measures the lock cycle alone.
        if lost.is_lost() {
            shared.record(Event::new(
                shared.now_us(),
                id,
                EventKind::Info,
                Op::LeaseLost,
                key,
            ));
        }
    } else {
        let hold_end = granted_at + hold;
        tokio::select! {
            _ = pace::sleep_until(hold_end) => {}
            _ = lost.wait() => {
                shared.record(Event::new(shared.now_us(), id, EventKind::Info, Op::LeaseLost, key));
                pace::sleep_until(hold_end).await;
            }
        }
    }
    let mut release = Event::new(shared.now_us(), id, EventKind::Invoke, Op::Release, key);
    release.hold_us = Some(hold.as_micros() as u64);
    shared.record(release);
    let outcome = recipe.release(lease).await;
    let (at, t_us) = shared.stamp();
    match outcome {
        Ok(()) => shared.record(Event::new(t_us, id, EventKind::Ok, Op::Release, key)),
        Err(e) => shared.record(Event::from_error(t_us, id, Op::Release, key, &e)),
    }
    at
}
