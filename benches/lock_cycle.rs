//! `lock_cycle/<system>/<strategy>/<contenders>`: the time of one lock cycle (acquire + release)
//! on a real cluster, with 1 and with 8 clients contending for the same key. One iteration is
//! one cycle completed by any contender, so at 8 contenders the figure is the cluster's time per
//! handed-over lock. Clusters start once per system, outside the timed loop. Without Docker or
//! the images, each system's group is skipped with one line saying why.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use lockbench::recipe::{AnyRecipe, BOTH_STRATEGIES, Recipe, RecipeConfig};
use lockbench::system::ALL_SYSTEMS;
use lockbench::{Cluster, ClusterOptions};

const CONTENDERS: [usize; 2] = [1, 8];

fn lock_cycle(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for system in ALL_SYSTEMS {
        let started = rt.block_on(async {
            lockbench::image::require(system.default_version()).await?;
            Cluster::start(lockbench::service::of(system), ClusterOptions::default()).await
        });
        let cluster = match started {
            Ok(c) => c,
            Err(e) => {
                eprintln!("lock_cycle/{system}: skipped: {e}");
                continue;
            }
        };
        let mut group = c.benchmark_group(format!("lock_cycle/{system}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(4));
        for strategy in BOTH_STRATEGIES {
            for n in CONTENDERS {
                let config = RecipeConfig {
                    prefix: format!("/lockbench-bench/{}/{strategy}-{n}", cluster.run_id()),
                    ..RecipeConfig::default()
                };
                let clients = rt.block_on(async {
                    let mut v = Vec::new();
                    for _ in 0..n {
                        v.push(lockbench::service::connect(&cluster, config.clone()).await?);
                    }
                    Ok::<_, lockbench::recipe::LockError>(v)
                });
                let clients: Arc<Vec<AnyRecipe>> = match clients {
                    Ok(v) => Arc::new(v),
                    Err(e) => {
                        eprintln!("lock_cycle/{system}/{strategy}/{n}: skipped: {e}");
                        continue;
                    }
                };
                group.bench_with_input(BenchmarkId::new(strategy.name(), n), &n, |b, _| {
                    b.to_async(&rt).iter_custom(|iters| {
                        let clients = clients.clone();
                        async move { cycles(clients, strategy, iters).await }
                    })
                });
            }
        }
        group.finish();
        if let Err(e) = rt.block_on(cluster.teardown()) {
            eprintln!("lock_cycle/{system}: teardown failed: {e}; run `lockbench clean`");
        }
    }
}

/// Runs `iters` cycles spread over all clients and returns the wall time they took.
async fn cycles(
    clients: Arc<Vec<AnyRecipe>>,
    strategy: lockbench::recipe::Strategy,
    iters: u64,
) -> Duration {
    let left = Arc::new(AtomicU64::new(iters));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..clients.len() {
        let clients = clients.clone();
        let left = left.clone();
        tasks.push(tokio::spawn(async move {
            let r = &clients[i];
            while left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
                .is_ok()
            {
                let deadline = Instant::now() + Duration::from_secs(30);
                match r.acquire("bench", strategy, deadline).await {
                    Ok(lease) => {
                        let _ = r.release(lease).await;
                    }
                    Err(e) => eprintln!("lock cycle failed: {e}"),
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    start.elapsed()
}

criterion_group!(benches, lock_cycle);
criterion_main!(benches);
