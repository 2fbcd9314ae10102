//! The lock cycle through the `redis` crate alone, with no harness: the ceiling of the client
//! library lockbench's Redis recipes use, for `benches/harness-overhead.sh`.
//!
//! `cargo run --release --example redis_client_cycle -- HOST:PORT CLIENTS SECONDS MODE` runs
//! CLIENTS tasks on the default multi-thread runtime, each on its own multiplexed connection
//! (as each lockbench client has its own), each looping over one lock cycle on random keys of
//! 100000, and prints one line: `cycles_per_s N` (after one second of warm-up). MODE says which
//! commands make a cycle:
//! - `pair`: the command pair redis-benchmark runs in that script, `SET key owner NX PX 10000`
//!   and then the compare-and-delete `EVAL` (by its SHA, as the `redis` crate's `Script` sends
//!   it). What this loses to redis-benchmark is the client library's cost.
//! - `recipe`: the herd recipe's own take and release scripts
//!   ([`lockbench::recipe::redis::herd_cycle_sources`]), with the arguments it sends. What this
//!   loses to `pair` is what the recipe's scripts cost (the fencing token and
//!   the release's message); what lockbench loses to this is the harness's cost.
//!
//! Nothing is recorded or checked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const COMPARE_AND_DELETE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

fn usage() -> ! {
    eprintln!(
        "usage: redis_client_cycle HOST:PORT CLIENTS SECONDS pair|recipe (e.g. 127.0.0.1:6379 8 10 pair)"
    );
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [endpoint, clients, seconds, mode] = args.as_slice() else {
        usage()
    };
    let recipe = match mode.as_str() {
        "pair" => false,
        "recipe" => true,
        _ => usage(),
    };
    let (Ok(clients), Ok(seconds)) = (clients.parse::<usize>(), seconds.parse::<u64>()) else {
        usage()
    };
    let client = match redis::Client::open(format!("redis://{endpoint}/")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("redis_client_cycle: {endpoint}: {e}");
            std::process::exit(2);
        }
    };
    let mut connections = Vec::new();
    for _ in 0..clients {
        let connecting = client.get_multiplexed_async_connection();
        match tokio::time::timeout(Duration::from_secs(5), connecting).await {
            Ok(Ok(c)) => connections.push(c),
            Ok(Err(e)) => {
                eprintln!("redis_client_cycle: {endpoint}: {e}");
                std::process::exit(1);
            }
            Err(_) => {
                eprintln!("redis_client_cycle: {endpoint} did not answer within 5 s");
                std::process::exit(1);
            }
        }
    }
    let (take, release) = lockbench::recipe::redis::herd_cycle_sources();
    let scripts: Arc<Scripts> = Arc::new((
        redis::Script::new(take),
        redis::Script::new(release),
        redis::Script::new(COMPARE_AND_DELETE),
    ));
    let cycles = Arc::new(AtomicU64::new(0));
    let counting = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = connections
        .into_iter()
        .enumerate()
        .map(|(i, conn)| {
            let (scripts, cycles, counting, stop) = (
                scripts.clone(),
                cycles.clone(),
                counting.clone(),
                stop.clone(),
            );
            tokio::spawn(client_loop(
                i, conn, scripts, recipe, cycles, counting, stop,
            ))
        })
        .collect();
    // One second of warm-up, as the harness-overhead workload has.
    tokio::time::sleep(Duration::from_secs(1)).await;
    counting.store(true, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let done = cycles.load(Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        if let Ok(Err(e)) = t.await {
            eprintln!("redis_client_cycle: {endpoint}: {e}");
            std::process::exit(1);
        }
    }
    println!("cycles_per_s {:.0}", done as f64 / elapsed);
}

/// The take script, the release script and the compare-and-delete, in that order.
type Scripts = (redis::Script, redis::Script, redis::Script);

/// One client: lock cycles on `conn` until `stop`, counting those that end while `counting`.
async fn client_loop(
    i: usize,
    mut conn: redis::aio::MultiplexedConnection,
    scripts: Arc<Scripts>,
    recipe: bool,
    cycles: Arc<AtomicU64>,
    counting: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    let mut n = i as u64;
    while !stop.load(Ordering::Relaxed) {
        // A cheap spread over 100000 keys, as redis-benchmark's -r 100000.
        n = n
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = format!("cycle:{}", (n >> 33) % 100_000);
        let owner = format!("c{i}");
        let both = async {
            let (take, release, compare_and_delete) = &*scripts;
            if recipe {
                let fence = format!("{key}:fence");
                take.key(&key)
                    .key(&fence)
                    .arg(&owner)
                    .arg(10_000)
                    .invoke_async::<(u64, i64, String)>(&mut conn)
                    .await?;
                return release
                    .key(&key)
                    .key(&fence)
                    .arg(&owner)
                    .arg(0)
                    .arg(format!("{owner}/{n}"))
                    .invoke_async::<i64>(&mut conn)
                    .await;
            }
            redis::cmd("SET")
                .arg(&key)
                .arg(&owner)
                .arg("NX")
                .arg("PX")
                .arg(10_000)
                .query_async::<Option<String>>(&mut conn)
                .await?;
            compare_and_delete
                .key(&key)
                .arg(&owner)
                .invoke_async::<i64>(&mut conn)
                .await
        };
        match tokio::time::timeout(Duration::from_secs(5), both).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err("no answer within 5 s".to_string()),
        }
        if counting.load(Ordering::Relaxed) {
            cycles.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}
