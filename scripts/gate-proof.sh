#!/usr/bin/env bash
# The gate's A/A and injected-slowdown proof (docs/book/src/gate.md#5-proving-the-gate-the-test-only-slowdown), paired: each try is ONE run of the
# `inject-delay` build with three copies of the same workload, `a`, `b` and `c`, in every
# `--repeat` round on that round's fresh clusters (their order turns from round to round).
# Only `b`'s releases are delayed, by 20 % of the handoff p50 that `a` measured in the try
# before (a first calibration run for try 1). The gate then judges, round by round:
#   A/A:      lockbench gate --pair a=c   (want exit 0)
#   slowdown: lockbench gate --pair a=b   (want exit 1)
# with `--threshold handoff_p50=10`. Each run: predecessor locks on SYSTEMS (default redis), 4
# clients, DURATION cells (default 6s), REPEAT rounds (default 12; at 6, one try in 3 missed);
# WORKLOAD (default workloads/hot-lock.toml) is what a, b and c copy.
#
#   cargo build --features inject-delay --bin lockbench && cp target/debug/lockbench /tmp/lockbench-slow
#   SLOW=/tmp/lockbench-slow scripts/gate-proof.sh run    # ~5 min a try, N tries (default 10)
#   SLOW=/tmp/lockbench-slow scripts/gate-proof.sh gate   # the verdicts, one line a try
set -u
D=${D:-/tmp/lockbench-gate-proof}
N=${N:-10}
SLOW=${SLOW:?the inject-delay build of lockbench}
SYSTEMS=${SYSTEMS:-redis}
ARGS=(--systems "$SYSTEMS" --strategies predecessor --clients 4
  --duration "${DURATION:-6s}" --repeat "${REPEAT:-12}")
GATE_ARGS=(--threshold handoff_p50=10)

run() { # name workloads... (env LOCKBENCH_INJECT_RELEASE_DELAY may be set by the caller)
  local name=$1 t0 rc
  shift
  t0=$(date +%s)
  local w=()
  for v in "$@"; do w+=(--workload "$D/w/$v.toml"); done
  "$SLOW" run --out "$D/$name" "${w[@]}" "${ARGS[@]}" >"$D/$name.log" 2>&1
  rc=$?
  echo "$name exit $rc, $(($(date +%s) - t0)) s ${LOCKBENCH_INJECT_RELEASE_DELAY:-}" >>"$D/progress"
}

delay_of() { # run folder: 20 % of each system's median handoff p50 of workload a, as
  #            LOCKBENCH_INJECT_RELEASE_DELAY parts for workload b (redis-predecessor-b=Nus,...)
  python3 - "$1/latest/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
parts = []
for c in s["repeated"]:
    system, strategy, workload = c["cell"].split("-")[:3]
    if workload == "a":
        us = round(0.2 * c["metrics"]["handoff_p50"]["median"])
        parts.append(f"{system}-{strategy}-b={us}us")
print(",".join(parts))
PY
}

case ${1:-} in
run)
  mkdir -p "$D/w"
  for v in a b c; do # the same workload under three names (a cell id carries the name)
    cp "${WORKLOAD:-$(dirname "$0")/../workloads/hot-lock.toml}" "$D/w/$v.toml"
  done
  [ -d "$D/calibrate" ] || run calibrate a
  prev=$D/calibrate
  for i in $(seq 1 "$N"); do
    if [ ! -d "$D/t$i" ]; then
      LOCKBENCH_INJECT_RELEASE_DELAY=$(delay_of "$prev") run "t$i" a b c
    fi
    prev=$D/t$i
  done
  ;;
gate)
  printf '| try | delay | A/A exit (want 0) | slowdown exit (want 1) | handoff a→b | handoff a→c |\n|---|---|---|---|---|---|\n'
  for i in $(seq 1 "$N"); do
    [ -f "$D/t$i/latest/summary.json" ] || break
    "$SLOW" gate --current "$D/t$i/latest" --pair a=c "${GATE_ARGS[@]}" >"$D/gate-aa$i.md"
    aa=$?
    "$SLOW" gate --current "$D/t$i/latest" --pair a=b "${GATE_ARGS[@]}" >"$D/gate-slow$i.md"
    slow=$?
    change() { grep '| handoff_p50 |' "$1" | cut -d'|' -f6 | sed 's/ (paired.*//; s/^ *//' | paste -sd';' -; }
    delay=$(grep "^t$i exit" "$D/progress" | tail -1 | awk '{print $NF}')
    echo "| $i | $delay | $aa | $slow | $(change "$D/gate-slow$i.md") | $(change "$D/gate-aa$i.md") |"
  done
  ;;
*)
  echo "usage: SLOW=... $0 run | gate   (D=$D, N=$N)" >&2
  exit 2
  ;;
esac
