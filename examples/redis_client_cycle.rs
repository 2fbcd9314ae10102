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
//!   ([`lockbench::service::redis::recipe::herd_cycle_sources`]), with the arguments it sends.
//!   What this loses to `pair` is what the recipe's scripts cost (the fencing token and
//!   the release's message); what lockbench loses to this is the harness's cost.
//! - `recipe-multi`, `recipe-lean`: the herd recipe's release script, after another take, to
//!   measure what the take's script costs (neither is what the recipe sends; on a 2-core
//!   machine, 2026-12-05, a take cheaper by about 3 µs of server time did not move the loop's
//!   rate at 8 clients). `recipe-multi` takes in one `MULTI`/`EXEC` transaction
//!   (`SET key owner NX PX 10000 GET`, the fencing `INCR`, `PTTL`: as atomic as the script, but
//!   the `INCR` runs on a refused take too); `recipe-lean` runs a script with only the `SET NX PX`
//!   and the `INCR`, answering the token alone where the recipe's answers three values.
//! - `pair-in-task`, `recipe-in-task`: the same, but each connection's driver (the future that
//!   writes requests and routes answers) is polled by its client's own task instead of running
//!   as a task of its own, as the crate spawns it; this measures whether the hop from the
//!   client's task to the driver's and back costs the rate (on 2-core machines it did not:
//!   the in-task loops were 2–17 % slower, 2026-12-05).
//!
//! `cargo run --release --example redis_client_cycle -- HOST:PORT load` loads the herd recipe's
//! take and release scripts into the server's script cache and prints `take SHA` and
//! `release SHA`: so redis-benchmark can run the recipe's own commands (`EVALSHA`, as the
//! recipe sends them) in `benches/harness-overhead.sh`.
//!
//! `REDIS_NODELAY=1` sets `TCP_NODELAY` on every connection (the crate leaves Nagle's algorithm
//! on by default).
//!
//! Nothing is recorded or checked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const COMPARE_AND_DELETE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

fn usage() -> ! {
    eprintln!(
        "usage: redis_client_cycle HOST:PORT CLIENTS SECONDS pair|recipe|pair-in-task|recipe-in-task|recipe-multi|recipe-lean (e.g. 127.0.0.1:6379 8 10 pair)\n       redis_client_cycle HOST:PORT load (prints the recipe's take and release scripts' SHAs)"
    );
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [endpoint, load] = args.as_slice()
        && load == "load"
    {
        load_recipe_scripts(endpoint).await;
        return;
    }
    let [endpoint, clients, seconds, mode] = args.as_slice() else {
        usage()
    };
    let (cycle, in_task) = match mode.as_str() {
        "pair" => (Cycle::Pair, false),
        "recipe" => (Cycle::Recipe, false),
        "recipe-multi" => (Cycle::RecipeMulti, false),
        "recipe-lean" => (Cycle::RecipeLean, false),
        "pair-in-task" => (Cycle::Pair, true),
        "recipe-in-task" => (Cycle::Recipe, true),
        _ => usage(),
    };
    let lean = cycle == Cycle::RecipeLean;
    let (Ok(clients), Ok(seconds)) = (clients.parse::<usize>(), seconds.parse::<u64>()) else {
        usage()
    };
    let nodelay = std::env::var_os("REDIS_NODELAY").is_some();
    let info = redis::IntoConnectionInfo::into_connection_info(format!("redis://{endpoint}/"))
        .map(|i| i.set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(nodelay)));
    let client = match info.and_then(redis::Client::open) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("redis_client_cycle: {endpoint}: {e}");
            std::process::exit(2);
        }
    };
    let mut connections = Vec::new();
    for _ in 0..clients {
        let connecting = connect(&client, endpoint, in_task, nodelay);
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
    let (take, release) = lockbench::service::redis::recipe::herd_cycle_sources();
    // `recipe-lean`'s take: the grant and its token, nothing for a refused take.
    let lean_take = "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return 0";
    let scripts: Arc<Scripts> = Arc::new((
        redis::Script::new(if lean { lean_take } else { take }),
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
            tokio::spawn(client_loop(i, conn, scripts, cycle, cycles, counting, stop))
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

/// Loads the herd recipe's take and release scripts (`load` mode) and prints their SHAs, or
/// exits 1 saying why it could not.
async fn load_recipe_scripts(endpoint: &str) {
    let loading = async {
        let client = redis::Client::open(format!("redis://{endpoint}/"))?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let (take, release) = lockbench::service::redis::recipe::herd_cycle_sources();
        let mut shas = Vec::new();
        for source in [take, release] {
            shas.push(redis::Script::new(source).load_async(&mut conn).await?);
        }
        redis::RedisResult::Ok(shas)
    };
    match tokio::time::timeout(Duration::from_secs(5), loading).await {
        Ok(Ok(shas)) => println!("take {}\nrelease {}", shas[0], shas[1]),
        Ok(Err(e)) => {
            eprintln!("redis_client_cycle: {endpoint}: loading the recipe's scripts: {e}");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!(
                "redis_client_cycle: {endpoint} did not load the recipe's scripts within 5 s"
            );
            std::process::exit(1);
        }
    }
}

/// A connection and, when its driver runs in the client's own task, that driver.
type Connection = (
    redis::aio::MultiplexedConnection,
    Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
);

/// One multiplexed connection: its driver spawned on the runtime (as the crate does), or
/// handed back to be polled by the client's own task (`in_task`).
async fn connect(
    client: &redis::Client,
    endpoint: &str,
    in_task: bool,
    nodelay: bool,
) -> redis::RedisResult<Connection> {
    if !in_task {
        return Ok((client.get_multiplexed_async_connection().await?, None));
    }
    let stream = tokio::net::TcpStream::connect(endpoint).await?;
    stream.set_nodelay(nodelay)?;
    let (conn, driver) = redis::aio::MultiplexedConnection::new_with_config(
        client.get_connection_info().redis_settings(),
        stream,
        redis::AsyncConnectionConfig::new(),
    )
    .await?;
    Ok((conn, Some(Box::pin(driver))))
}

/// Which commands make one cycle (the modes of the module doc; `-in-task` is separate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cycle {
    Pair,
    Recipe,
    RecipeMulti,
    RecipeLean,
}

/// The take script, the release script and the compare-and-delete, in that order.
type Scripts = (redis::Script, redis::Script, redis::Script);

/// One client: lock cycles on `conn` until `stop`, counting those that end while `counting`.
async fn client_loop(
    i: usize,
    (mut conn, mut driver): Connection,
    scripts: Arc<Scripts>,
    cycle: Cycle,
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
            if cycle != Cycle::Pair {
                let fence = format!("{key}:fence");
                if cycle == Cycle::RecipeMulti {
                    redis::pipe()
                        .atomic()
                        .cmd("SET")
                        .arg(&key)
                        .arg(&owner)
                        .arg("NX")
                        .arg("PX")
                        .arg(10_000)
                        .arg("GET")
                        .cmd("INCR")
                        .arg(&fence)
                        .cmd("PTTL")
                        .arg(&key)
                        .query_async::<(Option<String>, u64, i64)>(&mut conn)
                        .await?;
                } else if cycle == Cycle::RecipeLean {
                    take.key(&key)
                        .key(&fence)
                        .arg(&owner)
                        .arg(10_000)
                        .invoke_async::<u64>(&mut conn)
                        .await?;
                } else {
                    take.key(&key)
                        .key(&fence)
                        .arg(&owner)
                        .arg(10_000)
                        .invoke_async::<(u64, i64, String)>(&mut conn)
                        .await?;
                }
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
        let both = async {
            match driver.as_mut() {
                None => both.await,
                Some(driver) => tokio::select! {
                    biased;
                    r = both => r,
                    _ = driver => Err(redis::RedisError::from((redis::ErrorKind::Io, "connection closed"))),
                },
            }
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
