//! Docker-free benchmarks of the suite's own hot paths: recording one history event, merging two
//! latency histograms, and computing a cell's statistics from a synthetic million-event history.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lockbench::history::{Event, EventKind, Op, Recorder};
use lockbench::plan::{CellId, NO_CHAOS};
use lockbench::recipe::Strategy;
use lockbench::stats::{self, CellInfo};
use lockbench::system::System;

/// A closed-loop history of `cycles` lock cycles by 16 clients on one key (4 events a cycle).
fn synthetic_history(cycles: u64) -> Vec<Event> {
    let mut events = Vec::with_capacity(cycles as usize * 4);
    let mut t = 0u64;
    for i in 0..cycles {
        let client = (i % 16) as u32;
        events.push(Event::new(
            t,
            client,
            EventKind::Invoke,
            Op::Acquire,
            "k00000",
        ));
        t += 40 + (i * 7919) % 300;
        let mut ok = Event::new(t, client, EventKind::Ok, Op::Acquire, "k00000");
        ok.token = Some(i + 1);
        ok.wakeups = Some(1);
        ok.requests = Some(3);
        events.push(ok);
        t += 1000 + (i * 104_729) % 4000;
        events.push(Event::new(
            t,
            client,
            EventKind::Invoke,
            Op::Release,
            "k00000",
        ));
        t += 50;
        events.push(Event::new(t, client, EventKind::Ok, Op::Release, "k00000"));
    }
    events
}

fn suite(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let path = std::env::temp_dir().join(format!("lockbench-bench-{}.jsonl", std::process::id()));
    let recorder = rt
        .block_on(async { Recorder::create(&path) })
        .expect("recorder");
    let handle = recorder.handle();
    c.bench_function("history/record_event", |b| {
        b.iter(|| {
            let mut e = Event::new(handle.now_us(), 3, EventKind::Ok, Op::Acquire, "k00000");
            e.token = Some(42);
            handle.record(e).expect("record");
        })
    });
    rt.block_on(recorder.finish()).expect("finish");
    let _ = std::fs::remove_file(&path);

    let mut a = stats::new_histogram();
    let mut bh = stats::new_histogram();
    for i in 0..100_000u64 {
        a.record(1 + (i * 7919) % 2_000_000).expect("record");
        bh.record(1 + (i * 104_729) % 2_000_000).expect("record");
    }
    c.bench_function("stats/histogram_merge_100k", |b| {
        b.iter(|| {
            let mut m = a.clone();
            m.add(&bh).expect("merge");
            m
        })
    });

    let events = synthetic_history(250_000);
    let cell = CellInfo {
        id: CellId {
            system: System::Redis,
            strategy: Strategy::Predecessor,
            workload: "synthetic".into(),
            chaos: NO_CHAOS.into(),
            clients: 16,
            repetition: None,
        },
        warmup: Duration::ZERO,
        end_us: None,
        resource: Default::default(),
        expect: Default::default(),
        settle_ms: None,
    };
    let mut group = c.benchmark_group("stats");
    group.sample_size(10);
    group.bench_function("analyze_1m_events", |b| {
        b.iter(|| stats::analyze(&events, &cell))
    });
    group.finish();
}

criterion_group!(benches, suite);
criterion_main!(benches);
