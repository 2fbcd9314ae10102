#!/usr/bin/env bash
# Safety across server versions: the faults that decide whether a lock is still a lock, on both
# versions of ZooKeeper, etcd and Redis (with Sentinel) and on Valkey, predecessor strategy (the
# herd changes speed, not safety), workloads/held-locks.toml (8 s holds on a 10 s lease, held
# across the faults), --repeat N (default 3: rounds on fresh clusters, seeds seed .. seed+N-1).
# Two runs, because the schedules need cells of different lengths:
#   short  kill-leader and pause-clients (worker processes), 20 s cells
#   long   isolate-leader and split-even-20s (4-node ZooKeeper and etcd; Redis is refused by
#          the schedule: its data nodes do not vote), 40 s cells
# Then prints the table of verdicts and recovery times per version (benches/versions-table.py),
# and writes it to OUT/versions.md. Needs Docker and the lockbench images (built on first use).
#
#   benches/versions-safety.sh [--debug] [--repeat N] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
repeat=3
out=results/versions-safety
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) profile=debug ;;
    --repeat) repeat=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "versions-safety: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
command -v python3 >/dev/null || { echo "versions-safety: needs python3 for the table" >&2; exit 2; }
# LOCKBENCH_BIN: a lockbench binary to run instead of building one.
if [ -z "${LOCKBENCH_BIN:-}" ]; then
  if [ "$profile" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
fi
bin="${LOCKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/$profile/lockbench}"
versions=zookeeper@3.8,zookeeper@3.9,etcd@3.4,etcd@3.5,redis@7.0,redis@8.0,redis@valkey-8.1
status=0
# Exit 1 is a verdict (a cell expected safe judged unsafe): the table shows it.
run() { "$bin" run --floor-samples 0 --systems "$versions" --strategies predecessor \
  --workload workloads/held-locks.toml --repeat "$repeat" "$@" || status=$?; }
run --out "$out/short" --duration 20s --clients-as processes \
  --chaos chaos/kill-leader.toml --chaos chaos/pause-clients.toml
run --out "$out/long" --duration 40s --chaos chaos/isolate-leader.toml --chaos chaos/split-even-20s.toml
python3 benches/versions-table.py "$out/short/latest" "$out/long/latest" | tee "$out/versions.md"
exit "$status"
