//! One lock client's loop: choose a key, acquire, hold, release, think; every step lands in the
//! history as invoke/ok/fail/info events on the run's one clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::Barrier;

use crate::history::{Event, EventKind, HistoryHandle, Op};
use crate::recipe::{Recipe, Strategy, Tally};
use crate::spec::{Stop, Workload};
use crate::workload::distribution::{KeyChooser, client_rng};

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
}

/// Runs client `id` until the cell's stop condition holds.
pub(crate) async fn drive<R: Recipe>(recipe: R, id: u32, shared: Arc<CellShared>) -> R {
    let wl = &shared.workload;
    let mut rng = client_rng(wl.seed, id);
    let keys = KeyChooser::new(wl.keys, wl.key_distribution);
    let rounds = wl.stampede.map(|s| s.rounds as u64);
    let mut n: u64 = 0;
    loop {
        if let Some(r) = rounds {
            if n >= r {
                break;
            }
            if let Some(b) = &shared.barrier {
                b.wait().await;
            }
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
            tokio::time::sleep_until(at.into()).await;
        }
        one_cycle(&recipe, id, &key, intended, &shared, &mut rng).await;
        n += 1;
        if wl.arrival == crate::spec::Arrival::Closed {
            let think = wl.think.sample(&mut rng);
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
        }
    }
    recipe
}

async fn one_cycle<R: Recipe>(
    recipe: &R,
    id: u32,
    key: &str,
    intended: Option<Instant>,
    shared: &CellShared,
    rng: &mut rand::rngs::StdRng,
) {
    let wl = &shared.workload;
    let mut invoke = Event::new(shared.now_us(), id, EventKind::Invoke, Op::Acquire, key);
    invoke.intended_us =
        intended.map(|t| t.saturating_duration_since(shared.started).as_micros() as u64);
    shared.record(invoke);
    let deadline = Instant::now() + wl.acquire_timeout;
    let tally = Tally::default();
    let acquired = recipe
        .acquire_counted(key, shared.strategy, deadline, &tally)
        .await;
    let lease = match acquired {
        Ok(lease) => lease,
        Err(e) => {
            // What a failed wait cost counts too: the herd is at its worst where waiters give up.
            let mut failed = Event::from_error(shared.now_us(), id, Op::Acquire, key, &e);
            with_counts(&mut failed, &tally);
            shared.record(failed);
            return;
        }
    };
    shared.granted.fetch_add(1, Ordering::Relaxed);
    let mut ok = Event::new(shared.now_us(), id, EventKind::Ok, Op::Acquire, key);
    ok.token = Some(lease.token);
    with_counts(&mut ok, &tally);
    ok.queue_position = lease.queue_position;
    ok.ttl_ms = Some(lease.ttl.as_millis() as u64);
    shared.record(ok);

    // Hold for the sampled time; if the lease is lost meanwhile, say so (the holder, like a real
    // one, finishes its critical section: that is what a checker must catch).
    let hold = wl.hold.sample(rng);
    let mut lost = lease.lost.clone();
    if hold.is_zero() {
        // A zero sleep still waits for the timer's next millisecond tick: skip it.
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
        let hold_end = tokio::time::Instant::now() + hold;
        tokio::select! {
            _ = tokio::time::sleep_until(hold_end) => {}
            _ = lost.wait() => {
                shared.record(Event::new(shared.now_us(), id, EventKind::Info, Op::LeaseLost, key));
                tokio::time::sleep_until(hold_end).await;
            }
        }
    }
    shared.record(Event::new(
        shared.now_us(),
        id,
        EventKind::Invoke,
        Op::Release,
        key,
    ));
    match recipe.release(lease).await {
        Ok(()) => shared.record(Event::new(
            shared.now_us(),
            id,
            EventKind::Ok,
            Op::Release,
            key,
        )),
        Err(e) => shared.record(Event::from_error(shared.now_us(), id, Op::Release, key, &e)),
    }
}

/// Copies what an acquisition cost onto its outcome event.
fn with_counts(ev: &mut Event, tally: &Tally) {
    ev.wakeups = tally.wakeup_count();
    ev.requests = Some(tally.request_count());
    ev.fallback_polls = Some(tally.fallback_poll_count());
}
