#!/usr/bin/env bash
# The lock libraries beside lockbench's recipes, on the same clusters (the guide's "Library
# drivers: findings"). Two runs:
#   speed  workloads/hot-lock-unfenced.toml at 16 clients, no faults: every shipped library
#          beside both recipe strategies of its system (--duration, default 10s)
#   pause  workloads/held-locks-unfenced.toml under chaos/pause-clients.toml, one client per
#          driver process (--clients-as processes), --repeat N rounds on fresh clusters (default
#          3: seeds seed .. seed+N-1); no library gives a fencing token, so unfenced only
# Then prints each run's report tables (OUT/speed/latest/report.md, OUT/pause/latest/report.md).
# Needs Docker, the lockbench images (built on first use), PyPI on the Python drivers' first use
# and Debian's Curator and JDK packages (drivers/curator/run.sh says which).
#
#   benches/libraries.sh [--debug] [--repeat N] [--duration D] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
repeat=3
duration=10s
out=results/libraries
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) profile=debug ;;
    --repeat) repeat=$2; shift ;;
    --duration) duration=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "libraries: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
# LOCKBENCH_BIN: a lockbench binary to run instead of building one.
if [ -z "${LOCKBENCH_BIN:-}" ]; then
  if [ "$profile" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
fi
bin="${LOCKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/$profile/lockbench}"
drivers=curator,kazoo,python-etcd3,pottery,example-redis-py
# Each driver readied first (a virtual environment, a compile), so no cell waits on PyPI; a
# driver that does not start is named here (the run would refuse its cells too).
"$bin" doctor --clients-from "$drivers" | grep -i driver || true
status=0
# Exit 1 is a verdict (a cell expected safe judged unsafe): the reports show it.
"$bin" run --floor-samples 0 --systems zookeeper,etcd,redis,redlock --clients-from "$drivers" \
  --workload workloads/hot-lock-unfenced.toml --duration "$duration" --out "$out/speed" || status=$?
"$bin" run --floor-samples 0 --systems zookeeper,etcd,redis,redlock --clients-from "$drivers" \
  --workload workloads/held-locks-unfenced.toml --chaos chaos/pause-clients.toml \
  --clients-as processes --repeat "$repeat" --out "$out/pause" || status=$?
for part in speed pause; do
  echo "== $part: $out/$part/latest/report.md"
  sed -n '/^| system/,/^$/p;/^## Rates/,/^## [^R]/p;/^## Libraries/,/^## [^L]/p' \
    "$out/$part/latest/report.md"
done
exit "$status"
