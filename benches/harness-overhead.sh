#!/usr/bin/env bash
# Harness overhead: lock cycles/s (acquire + release) on one uncontended Redis master, measured by
# lockbench and by redis-benchmark running the equivalent command pair (SET NX PX, then EVAL of
# the compare-and-delete script) at the same concurrency, on the same kind of cluster.
# Needs redis-benchmark on the host (apt-get install redis-tools). Prints a table and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v redis-benchmark >/dev/null || { echo "needs redis-benchmark: apt-get install redis-tools" >&2; exit 2; }
bin=./target/release/lockbench
cargo build --release --quiet
out=$(mktemp -d)
trap 'kill "${up_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$out"' EXIT

"$bin" run --systems redis --workload workloads/harness-overhead.toml --clients 1,8 --duration 10s --out "$out" >/dev/null
lb1=$(python3 -c "import json;print(json.load(open('$out/latest/cells/redis-herd-harness-overhead-c1/summary.json'))['throughput_per_s'])")
lb8=$(python3 -c "import json;print(json.load(open('$out/latest/cells/redis-herd-harness-overhead-c8/summary.json'))['throughput_per_s'])")

"$bin" up redis --size 1 > "$out/up.json" &
up_pid=$!
for _ in $(seq 1 240); do grep -q '^}' "$out/up.json" 2>/dev/null && break; sleep 0.5; done
port=$(python3 -c "import json;print(json.load(open('$out/up.json'))['endpoints'][0].split(':')[1])")
cad="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
rate() { # clients, then the command
  local c=$1; shift
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$c" -n $((20000 * c)) -r 100000 -q "$@" | tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1
}
for c in 1 8; do
  set_rate=$(rate "$c" SET "lock:__rand_int__" owner NX PX 10000)
  eval_rate=$(rate "$c" EVAL "$cad" 1 "lock:__rand_int__" owner)
  cycle=$(python3 -c "print(1/(1/$set_rate + 1/$eval_rate))")
  lb=$([ "$c" = 1 ] && echo "$lb1" || echo "$lb8")
  python3 -c "print(f'clients {$c}: lockbench {float($lb):.0f} cycles/s; redis-benchmark SET NX PX {float($set_rate):.0f}/s, EVAL {float($eval_rate):.0f}/s => {float($cycle):.0f} cycles/s; lockbench/redis-benchmark = {float($lb)/float($cycle):.2f}')"
done
kill -INT "$up_pid"; wait "$up_pid" || true
