//! Measures ways to wait a precise time inside tokio, the evidence behind `workload::pace`.
//!
//! `cargo run --example pace_candidates` runs every candidate with 16 and 64 concurrent waiters
//! at targets of 0.2, 1 and 5 ms (waiters start staggered over one target, as holders do) on
//! the default multi-thread runtime, and prints, per row, the late-wake error (actual − target)
//! at p50/p90/p99 and the process CPU the waiting cost, in cores. An argument keeps only the
//! candidates whose name contains it (`... -- Timer`). Linux only (timerfd, prctl).

use std::collections::{BinaryHeap, HashMap};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How much earlier than the target the coarse tokio sleep ends (its tick is 1 ms).
const EARLY: Duration = Duration::from_micros(2000);

#[derive(Clone, Copy, Debug)]
enum Candidate {
    /// `tokio::time::sleep_until` alone: what the client did before.
    Tokio,
    /// Coarse tokio sleep, then `std::thread::sleep` for the rest on a blocking thread.
    Blocking,
    /// Coarse tokio sleep, then a spin that yields to the scheduler between checks.
    SpinYield,
    /// Coarse tokio sleep, then one shared timer thread wakes the waiter from a deadline heap.
    Timer(TimerCfg),
    /// Coarse tokio sleep, then a one-shot timerfd the runtime's epoll wakes the task from.
    TimerFd,
    /// A timerfd for the whole wait.
    TimerFdOnly,
    /// What `lockbench::pace` does (whichever candidate was chosen).
    Pace,
}

impl Candidate {
    fn name(&self) -> String {
        match self {
            Candidate::Timer(c) => format!(
                "Timer(slack{},spin{},margin{})",
                if c.low_slack { 1 } else { 50_000 },
                c.thread_spin.as_micros(),
                c.waiter_margin.as_micros()
            ),
            other => format!("{other:?}"),
        }
    }
}

async fn wait(c: Candidate, timer: Option<&mpsc::Sender<Registration>>, target: Instant) {
    let coarse = async {
        if let Some(early) = target.checked_sub(EARLY)
            && early > Instant::now()
        {
            tokio::time::sleep_until(early.into()).await;
        }
    };
    match c {
        Candidate::Tokio => tokio::time::sleep_until(target.into()).await,
        Candidate::Blocking => {
            coarse.await;
            let _ = tokio::task::spawn_blocking(move || {
                let now = Instant::now();
                if target > now {
                    std::thread::sleep(target - now);
                }
            })
            .await;
        }
        Candidate::SpinYield => {
            coarse.await;
            while Instant::now() < target {
                tokio::task::yield_now().await;
            }
        }
        Candidate::Timer(_) => {
            coarse.await;
            if let Some(t) = timer {
                timer_thread_wait(t, target).await;
            }
        }
        Candidate::TimerFd => {
            coarse.await;
            let _ = timerfd_wait(target).await;
        }
        Candidate::TimerFdOnly => {
            let _ = timerfd_wait(target).await;
        }
        Candidate::Pace => lockbench::pace::sleep_until(target).await,
    }
}

type Registration = (Instant, tokio::sync::oneshot::Sender<()>);

/// How a shared timer thread waits for its earliest deadline.
#[derive(Clone, Copy, Debug)]
struct TimerCfg {
    /// Lower the thread's timer slack from Linux's default 50 µs to 1 ns.
    low_slack: bool,
    /// Sleep until this much before the earliest deadline, then spin on the thread to it.
    thread_spin: Duration,
    /// Fire this much before the target; the woken task yields in a loop until the target.
    waiter_margin: Duration,
}

/// One std thread keeps a heap of deadlines and sleeps on its channel until the earliest one.
fn start_timer(cfg: TimerCfg) -> mpsc::Sender<Registration> {
    let (tx, rx) = mpsc::channel::<Registration>();
    std::thread::spawn(move || {
        if cfg.low_slack {
            // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        }
        let mut heap: BinaryHeap<std::cmp::Reverse<(Instant, u64)>> = BinaryHeap::new();
        let mut senders = HashMap::new();
        let mut seq = 0u64;
        loop {
            let mut now = Instant::now();
            if let Some(std::cmp::Reverse((at, _))) = heap.peek().copied()
                && at > now
                && at.duration_since(now) <= cfg.thread_spin
            {
                while Instant::now() < at {
                    std::hint::spin_loop();
                }
                now = Instant::now();
            }
            while let Some(std::cmp::Reverse((at, id))) = heap.peek().copied() {
                if at > now {
                    break;
                }
                heap.pop();
                if let Some(s) = senders.remove(&id) {
                    let _: Result<(), ()> = tokio::sync::oneshot::Sender::send(s, ());
                }
            }
            let got = match heap.peek() {
                Some(std::cmp::Reverse((at, _))) => rx.recv_timeout(
                    at.saturating_duration_since(now)
                        .saturating_sub(cfg.thread_spin),
                ),
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            };
            match got {
                Ok((at, s)) => {
                    seq += 1;
                    heap.push(std::cmp::Reverse((at - cfg.waiter_margin, seq)));
                    senders.insert(seq, s);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    });
    tx
}

async fn timer_thread_wait(timer: &mpsc::Sender<Registration>, target: Instant) {
    if target <= Instant::now() {
        return;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    if timer.send((target, tx)).is_ok() {
        let _ = rx.await;
    }
    while Instant::now() < target {
        tokio::task::yield_now().await;
    }
}

/// Arms a one-shot timerfd (no timer slack applies to it) and awaits it through tokio's reactor.
async fn timerfd_wait(target: Instant) -> std::io::Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let now = Instant::now();
    if target <= now {
        return Ok(());
    }
    // SAFETY: plain syscalls on a descriptor this function owns.
    let raw = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let d = target - now;
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: `fd` is a timerfd; `spec` outlives the call.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is owned by the AsyncFd and closed only when it is dropped.
    let afd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    }
    .map_err(std::io::Error::from)?;
    loop {
        let mut guard = afd.readable().await?;
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `buf`.
        let n = unsafe { libc::read(afd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        if n == 8 {
            return Ok(());
        }
        guard.clear_ready();
    }
}

/// Process CPU time (user + system) from /proc/self/stat, in seconds.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0);
    ticks / 100.0 // USER_HZ is 100 on Linux
}

fn pct(sorted: &[i64], q: f64) -> i64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

async fn measure(c: Candidate, waiters: usize, target: Duration, waits: usize) -> (Vec<i64>, f64) {
    let timer = match c {
        Candidate::Timer(cfg) => Some(start_timer(cfg)),
        _ => None,
    };
    let cpu0 = cpu_s();
    let wall0 = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..waiters {
        let timer = timer.clone();
        tasks.push(tokio::spawn(async move {
            // Stagger the starts over one target so the waiters do not all wake together.
            tokio::time::sleep(target * w as u32 / waiters as u32).await;
            let mut errs = Vec::with_capacity(waits);
            for _ in 0..waits {
                let at = Instant::now() + target;
                wait(c, timer.as_ref(), at).await;
                errs.push(Instant::now().duration_since(at).as_micros() as i64);
            }
            errs
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    let cores = (cpu_s() - cpu0) / wall0.elapsed().as_secs_f64();
    all.sort_unstable();
    (all, cores)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // An optional argument keeps only the candidates whose name contains it.
    let only: Option<String> = std::env::args().nth(1);
    let timer = |low_slack, spin_us, margin_us| {
        Candidate::Timer(TimerCfg {
            low_slack,
            thread_spin: Duration::from_micros(spin_us),
            waiter_margin: Duration::from_micros(margin_us),
        })
    };
    let cands = [
        Candidate::Tokio,
        Candidate::Blocking,
        Candidate::SpinYield,
        timer(false, 0, 0),
        timer(true, 0, 0),
        timer(true, 30, 0),
        timer(true, 0, 50),
        Candidate::TimerFd,
        Candidate::TimerFdOnly,
        Candidate::Pace,
    ];
    println!(
        "{:<32} waiters target_us  p50_err_us p90_err_us p99_err_us  cpu_cores",
        "candidate"
    );
    for c in cands {
        if only
            .as_ref()
            .is_some_and(|o| !c.name().contains(o.as_str()))
        {
            continue;
        }
        for waiters in [16usize, 64] {
            for target_us in [200u64, 1000, 5000] {
                let target = Duration::from_micros(target_us);
                let waits = (1_000_000 / target_us as usize).clamp(200, 2000);
                let (errs, cores) = rt.block_on(measure(c, waiters, target, waits));
                println!(
                    "{:<32} {:>7} {:>9} {:>11} {:>10} {:>10} {:>10.2}",
                    c.name(),
                    waiters,
                    target_us,
                    pct(&errs, 0.5),
                    pct(&errs, 0.9),
                    pct(&errs, 0.99),
                    cores
                );
            }
        }
    }
}
