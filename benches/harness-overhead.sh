#!/usr/bin/env bash
# Harness overhead (docs/book/src/measuring.md#what-the-harness-costs): uncontended lock cycles per second (acquire, then release)
# on one Redis master, lockbench's against redis-benchmark's on the equivalent command pair, side
# by side on the same master in one run, at 1, 8 and 64 clients.
#
# - One master, started once by `lockbench up redis --size 1`, serves both. lockbench reaches it
#   as a target without Sentinel, so every command goes straight to it, as redis-benchmark's do.
# - lockbench: workloads/harness-overhead.toml (no hold, no think, 100000 keys: the clients
#   practically never meet), release build, every event recorded and checked as in any run.
# - redis-benchmark: `SET key owner NX PX 10000`, then the compare-and-delete EVAL, each at the
#   same client count; a lock cycle is one of each, so the cycle rate is 1 / (1/set + 1/eval).
# - redis-benchmark also runs the herd recipe's own two scripts, by their SHAs as the recipe sends
#   them (loaded by `redis_client_cycle HOST:PORT load`): the take `EVALSHA` (KEYS lock and its
#   fencing counter; ARGV owner, 10000) and the release `EVALSHA` (KEYS the same; ARGV owner, 0,
#   a wake message), at the same client count, combined as the pair is. lockbench ÷ that is
#   what the harness and the Rust client cost against a C client sending the same commands; that
#   ÷ the pair is what the recipe's commands cost with no Rust in the loop at all, and so the
#   most lockbench ÷ redis-benchmark could reach with a client as cheap as redis-benchmark.
# - Two more loops split the gap (examples/redis_client_cycle.rs): the `redis` crate alone (no
#   harness, one multiplexed connection per client, as lockbench's clients have) running the
#   same pair ("pair": what the client library costs against redis-benchmark's C client), and
#   running the herd recipe's own take and release scripts ("recipe": what the scripts' fencing
#   token and message cost against the pair). lockbench ÷ "recipe" is the harness;
#   "recipe" ÷ redis-benchmark is what lockbench would reach with a harness that cost nothing.
# - The CPU lockbench and the "recipe" loop spend a cycle (user and system time from /proc over
#   the middle of each cell, HARNESS_SECONDS - 4 s of it from 3 s after the start, against its
#   cycles at the cell's rate): the harness's cost in microseconds, which moves less between
#   runs than the rates do (on two shared cores, a µs of the client's CPU is one the server
#   waits for). "-" where HARNESS_SECONDS is under 5.
# - For each client count the five (lockbench, the two loops, redis-benchmark's pair and its
#   recipe's scripts) run one after another on the same master, so all see the same machine.
# - All five reach the master the same way. By default (HARNESS_ROUTE=published) that is the
#   published 127.0.0.1 port, through docker-proxy, the path `lockbench run`'s own clusters
#   take; docker-proxy copies every byte both ways and was the largest CPU user of the two
#   cores in every loop (0.64-0.76 cores at 8 clients). HARNESS_ROUTE=bridge goes to the
#   container's own address on its Docker network, straight from this host, without it: every
#   loop runs about twice as fast, and the clients' own CPU weighs more (docs/book/src/measuring.md).
#
# Needs redis-benchmark on the host (apt-get install redis-tools). Prints a Markdown table.
# HARNESS_CLIENTS="1 8 64" (the client counts), HARNESS_SECONDS=10 (each lockbench cell),
# HARNESS_ROUTE=published|bridge (above), HARNESS_RUNS=1 (runs of the five per client count: with
# more, each cell is the median over the runs and each ratio also gives its range; single runs
# on two shared cores move by up to ±0.2).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v redis-benchmark >/dev/null || {
  echo "benches/harness-overhead.sh needs redis-benchmark: apt-get install redis-tools" >&2
  exit 2
}
clients=${HARNESS_CLIENTS:-1 8 64}
seconds=${HARNESS_SECONDS:-10}
route=${HARNESS_ROUTE:-published}
runs=${HARNESS_RUNS:-1}
[[ $runs =~ ^[1-9][0-9]*$ ]] || {
  echo "benches/harness-overhead.sh: HARNESS_RUNS=$runs: say a whole number of runs, 1 or more" >&2
  exit 2
}
case $route in
bridge | published) ;;
*)
  echo "benches/harness-overhead.sh: HARNESS_ROUTE=$route: say published (the default) or bridge" >&2
  exit 2
  ;;
esac
bin=./target/release/lockbench
cargo build --release --quiet --bin lockbench --example redis_client_cycle
bare=./target/release/examples/redis_client_cycle
out=$(mktemp -d)
trap 'kill -INT "${up_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$out"' EXIT

"$bin" up redis --size 1 >"$out/up.json" 2>"$out/up.log" &
up_pid=$!
for _ in $(seq 1 240); do grep -q '^}' "$out/up.json" 2>/dev/null && break; sleep 0.5; done
grep -q '^}' "$out/up.json" || { cat "$out/up.log" >&2; echo "lockbench up redis did not come up" >&2; exit 1; }
endpoint=$(python3 -c "
import json
up = json.load(open('$out/up.json'))
ip = up['nodes'][0].get('network_ip')
if '$route' == 'bridge':
    if not ip:
        raise SystemExit('lockbench up printed no network_ip for the master: run with HARNESS_ROUTE=published')
    print(ip + ':6379')
else:
    print(up['endpoints'][0])")
host=${endpoint%:*}
port=${endpoint##*:}
timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null || {
  echo "benches/harness-overhead.sh: this host cannot reach the master at $endpoint (HARNESS_ROUTE=$route); where Docker's networks are not routed to the host, run with HARNESS_ROUTE=published" >&2
  exit 1
}
cat >"$out/master.toml" <<EOF
# The one master of this script's cluster, without Sentinel.
system = "redis"
endpoints = ["$endpoint"]
prefix = "/harness-overhead"
EOF

# The recipe's take and release scripts in the master's script cache, for redis-benchmark.
shas=$("$bare" "$endpoint" load) || { echo "benches/harness-overhead.sh: could not load the recipe's scripts into $endpoint (above)" >&2; exit 1; }
take_sha=$(sed -n 's/^take //p' <<<"$shas")
release_sha=$(sed -n 's/^release //p' <<<"$shas")
cad="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
rate() { # clients, requests, then the command: redis-benchmark's requests per second
  local c=$1 n=$2
  shift 2
  redis-benchmark -h "$host" -p "$port" -c "$c" -n "$n" -r 100000 -q "$@" | tr '\r' '\n' |
    sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1
}

# CPU per cycle: each process's user and system time from /proc over the middle of its cell
# (from 3 s after it starts, for HARNESS_SECONDS - 4 s: past connecting, the floor probe and the
# warm-up, before the cell ends), against the cycles it made meanwhile at its cell's rate.
window=$((seconds - 4))
hz=$(getconf CLK_TCK)
ticks() { # user and system clock ticks of process $1 so far, or "- -" once it is gone
  awk '{print $14, $15}' "/proc/$1/stat" 2>/dev/null || echo "- -"
}
with_cpu() { # log file, command...: runs it (output to the log), prints "user system" ticks of the window
  local log=$1 pid a b
  shift
  "$@" >"$log" 2>&1 &
  pid=$!
  a="- -" b="- -"
  if ((window > 0)); then
    sleep 3
    a=$(ticks "$pid")
    sleep "$window"
    b=$(ticks "$pid")
  fi
  wait "$pid" || return 1
  read -r au as <<<"$a"
  read -r bu bs <<<"$b"
  if [[ $au == - || $bu == - ]]; then echo "- -"; else echo "$((bu - au)) $((bs - as))"; fi
}

echo "All five reach the master at $endpoint (HARNESS_ROUTE=$route); $runs run(s) per client count, medians."
echo
echo "| clients | lockbench | redis crate, recipe's scripts | redis crate, pair | redis-benchmark, pair (SET NX PX /s, EVAL /s) | redis-benchmark, recipe's scripts (take /s, release /s) | lockbench ÷ redis-benchmark | lockbench ÷ redis crate with the recipe's scripts (the harness) | redis crate ÷ redis-benchmark, pair (the client library) | redis crate with the recipe's scripts ÷ redis-benchmark (the most any harness could reach) | lockbench ÷ redis-benchmark with the recipe's scripts (harness and client, the same commands) | redis-benchmark: recipe's scripts ÷ pair (what the recipe's commands cost a C client) | CPU a cycle, µs: lockbench (user) | CPU a cycle, µs: redis crate with the recipe's scripts (user) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for c in $clients; do
  for r in $(seq 1 "$runs"); do
    lb_cpu=$(with_cpu "$out/run-c$c-r$r.log" "$bin" run --target "$out/master.toml" \
      --workload workloads/harness-overhead.toml --clients "$c" --duration "${seconds}s" \
      --out "$out/run-c$c-r$r") || {
      cat "$out/run-c$c-r$r.log" >&2
      echo "lockbench run at $c clients failed (above)" >&2
      exit 1
    }
    summary=$(ls "$out/run-c$c-r$r"/latest/cells/*/summary.json)
    lb=$(python3 -c "import json;print(json.load(open('$summary'))['throughput_per_s'])")
    recipe_cpu=$(with_cpu "$out/recipe.log" "$bare" "$endpoint" "$c" "$seconds" recipe) || {
      cat "$out/recipe.log" >&2
      echo "the redis crate's loop with the recipe's scripts failed at $c clients (above)" >&2
      exit 1
    }
    recipe=$(sed -n 's/^cycles_per_s //p' "$out/recipe.log")
    pair=$("$bare" "$endpoint" "$c" "$seconds" pair | sed -n 's/^cycles_per_s //p')
    # About 5 s of each command at the rate this machine reaches.
    n=$((c == 1 ? 30000 : 150000))
    set_rate=$(rate "$c" "$n" SET "lock:__rand_int__" owner NX PX 10000)
    eval_rate=$(rate "$c" "$n" EVAL "$cad" 1 "lock:__rand_int__" owner)
    take_rate=$(rate "$c" "$n" EVALSHA "$take_sha" 2 "lock:__rand_int__" "lock:__rand_int__:fence" owner 10000)
    release_rate=$(rate "$c" "$n" EVALSHA "$release_sha" 2 "lock:__rand_int__" "lock:__rand_int__:fence" owner 0 owner/123456)
    for v in lb recipe pair set_rate eval_rate take_rate release_rate; do
      [[ -n ${!v} ]] || {
        echo "benches/harness-overhead.sh: no $v rate at $c clients (run $r): its loop printed none" >&2
        exit 1
      }
    done
    echo "$lb $recipe $pair $set_rate $eval_rate $lb_cpu $recipe_cpu $take_rate $release_rate" >>"$out/c$c.rates"
  done
  # One row per client count: the median of the runs, and with more than one run each ratio's
  # range across them (each ratio from the five of the same run).
  python3 - "$c" "$out/c$c.rates" "$hz" "$window" <<'PY'
import statistics, sys
c, path, hz, window = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = []
def per_cycle(ticks, rate):
    # CPU µs a cycle over the window, or None where it was not read.
    return None if ticks == "-" else int(ticks) / hz / (rate * window) * 1e6
for line in open(path):
    f = line.split()
    lb, recipe, pair, s, e = map(float, f[:5])
    t, rel = map(float, f[9:11])
    # A lock cycle is one SET and one EVAL: its rate is 1 / (1/set + 1/eval); with the
    # recipe's scripts, one take and one release.
    runs.append(dict(lb=lb, recipe=recipe, pair=pair, s=s, e=e, cycle=1 / (1 / s + 1 / e),
                     t=t, rel=rel, scripts=1 / (1 / t + 1 / rel),
                     lb_user=per_cycle(f[5], lb), lb_sys=per_cycle(f[6], lb),
                     recipe_user=per_cycle(f[7], recipe), recipe_sys=per_cycle(f[8], recipe)))
def med(key):
    return statistics.median(r[key] for r in runs)
def cpu(who):
    # The median of user + system, and of user alone, over the runs that read both.
    read = [r for r in runs if r[who + "_user"] is not None and r[who + "_sys"] is not None]
    if not read:
        return "-"
    both = statistics.median(r[who + "_user"] + r[who + "_sys"] for r in read)
    return f"{both:.1f} ({statistics.median(r[who + '_user'] for r in read):.1f})"
def ratio(num, den):
    v = [r[num] / r[den] for r in runs]
    m = f"{statistics.median(v):.2f}"
    return m if len(v) == 1 else f"{m} ({min(v):.2f}-{max(v):.2f})"
print(f"| {c} | {med('lb'):.0f} | {med('recipe'):.0f} | {med('pair'):.0f} | "
      f"{med('cycle'):.0f} ({med('s'):.0f}, {med('e'):.0f}) | "
      f"{med('scripts'):.0f} ({med('t'):.0f}, {med('rel'):.0f}) | {ratio('lb', 'cycle')} | "
      f"{ratio('lb', 'recipe')} | {ratio('pair', 'cycle')} | {ratio('recipe', 'cycle')} | "
      f"{ratio('lb', 'scripts')} | {ratio('scripts', 'cycle')} | {cpu('lb')} | {cpu('recipe')} |")
PY
done
