#!/usr/bin/env bash
# The gate's A/A and injected-slowdown proof (issue 12), bracketed so the machine's drift
# cancels: runs A1, S1, B1, A2, B2, S2, A3, ... A(N+1). Try i's baseline pools A_i and A_(i+1),
# the runs on either side of it; its A/A current is B_i (same binary as A) and its slowdown
# current S_i, the `inject-delay` build with every release delayed by 20 % of A_i's handoff
# p50 (per system). S and B swap order every other try. Each run: predecessor locks on SYSTEMS
# (default redis), 4 clients, DURATION cells (default 6s), REPEAT rounds (default 5), each
# round on fresh clusters.
#
#   cargo build --bin lockbench && cp target/debug/lockbench /tmp/lockbench
#   cargo build --features inject-delay --bin lockbench && cp target/debug/lockbench /tmp/lockbench-slow
#   LB=/tmp/lockbench SLOW=/tmp/lockbench-slow scripts/gate-proof.sh run   # ~1 min a run, 31 runs
#   LB=/tmp/lockbench scripts/gate-proof.sh gate                          # the verdicts
set -u
D=${D:-/tmp/lockbench-gate-proof}
N=${N:-10}
LB=${LB:?the lockbench binary}
SLOW=${SLOW:-}
ARGS=(--systems "${SYSTEMS:-redis}" --strategies predecessor --clients 4
  --duration "${DURATION:-6s}" --repeat "${REPEAT:-5}")
GATE_ARGS=(--threshold handoff_p50=10)
mkdir -p "$D"

run() { # name binary [VAR=value]
  local name=$1 bin=$2 t0 rc
  shift 2
  t0=$(date +%s)
  env "$@" "$bin" run --out "$D/$name" "${ARGS[@]}" >"$D/$name.log" 2>&1
  rc=$?
  echo "$name exit $rc, $(($(date +%s) - t0)) s $*" >>"$D/progress"
}

delay_of() { # run folder: 20 % of each system's median handoff p50, as redis=Nus,redlock=Nus
  python3 - "$1/latest/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(",".join(f'{c["cell"].split("-")[0]}={round(0.2 * c["metrics"]["handoff_p50"]["median"])}us'
               for c in s["repeated"]))
PY
}

case ${1:-} in
run)
  [ -n "$SLOW" ] || { echo "SLOW: the inject-delay build of lockbench" >&2; exit 2; }
  [ -d "$D/a1" ] || run a1 "$LB"
  for i in $(seq 1 "$N"); do
    [ -d "$D/a$((i + 1))" ] && continue
    delay=$(delay_of "$D/a$i")
    echo "try $i: LOCKBENCH_INJECT_RELEASE_DELAY=$delay" >>"$D/progress"
    if [ $((i % 2)) -eq 1 ]; then
      run "s$i" "$SLOW" LOCKBENCH_INJECT_RELEASE_DELAY="$delay"
      run "b$i" "$LB"
    else
      run "b$i" "$LB"
      run "s$i" "$SLOW" LOCKBENCH_INJECT_RELEASE_DELAY="$delay"
    fi
    run "a$((i + 1))" "$LB"
  done
  ;;
gate)
  printf '| try | A/A exit (want 0) | slowdown exit (want 1) | slowdown rows caught |\n|---|---|---|---|\n'
  for i in $(seq 1 "$N"); do
    [ -d "$D/a$((i + 1))" ] || break
    "$LB" baseline save "$D/base$i.json" --from "$D/a$i/latest" --from "$D/a$((i + 1))/latest" >/dev/null
    "$LB" gate --baseline "$D/base$i.json" --current "$D/b$i/latest" "${GATE_ARGS[@]}" >"$D/gate-aa$i.md"
    aa=$?
    "$LB" gate --baseline "$D/base$i.json" --current "$D/s$i/latest" "${GATE_ARGS[@]}" >"$D/gate-slow$i.md"
    slow=$?
    caught=$(grep '| REGRESSED |$' "$D/gate-slow$i.md" | cut -d'|' -f2,3,6 | tr -s ' ' | paste -sd';' -)
    echo "| $i | $aa | $slow | ${caught:-none} |"
  done
  ;;
*)
  echo "usage: LB=... SLOW=... $0 run | gate   (D=$D, N=$N)" >&2
  exit 2
  ;;
esac
