#!/usr/bin/env bash
# The chaos matrix: every system and strategy under the faults that decide whether a lock is
# still a lock, plus the rates of the faults that only sometimes break one. Far too long for
# `cargo test` (about 30 s per cell, 60+ cells), so it is a benchmark-style command: it prints a
# table and writes it to OUT/matrix.md. Needs Docker and the lockbench images (built on first
# use) and python3 for the table.
#
#   benches/chaos-matrix.sh [--debug] [--repeats N] [--duration D] [--only PART] [OUT]
#
# Parts (all by default, or one with --only):
#   faults  kill-leader, partition-halves, isolate-leader (Redis's split brain) and
#           partition-even (4-node ZooKeeper / etcd) on every system and strategy, hot-lock
#   pause   pause-clients (a holder stopped 15 s, past its 10 s lease) on every system and
#           strategy, workloads/held-locks.toml (8 s holds), with the fenced register and with
#           the unfenced one (worker processes)
#   rates   every shipped schedule (chaos/*.toml but none) × every system it applies to × both
#           strategies, `--repeat N` (default 5: repetition k on the seeds plus k - 1, each
#           round on fresh clusters), workloads/held-locks.toml (held across the faults;
#           pause-clients with worker processes), 20 s cells (pause-node 30 s, isolate-leader
#           and split-even-20s 40 s, so that each schedule's first fault lands inside every
#           cell). One `lockbench run` per schedule and system, into OUT/rates/<schedule>/<system>/;
#           a group whose folder holds `complete` is skipped, so a matrix stopped by Ctrl-C (or
#           a reboot) resumes where it stopped when run again with the same OUT: the group it
#           stopped in runs again from its start, in a new run folder beside the unfinished one.
#           A group that failed (exit 2: a cluster did not start) is not marked and runs again
#           next time. Prints each cell's rates from the runs' summary.json: unsafe in k of n
#           with the 95 % Wilson interval, the classes of finding that showed, recovery median
#           and range (OUT/rates.md). Hours: 30-40 s a cell with its cluster's start, N rounds.
#   split   the even split's figures: chaos/split-even-20s (4-node ZooKeeper and etcd cut 2 | 2
#           from 8 s to 28 s), 8 clients of hot-lock, 40 s cells, both strategies, N repetitions
#           (--repeat N, fresh clusters each round): verdicts, acquisitions left unknown, the
#           most failed acquisitions of one client, requests per client-second during the
#           split, and recovery after the heal (median), split into the cluster's share (heal →
#           the first outcome only the cluster could give) and the clients' (→ the first grant)
#   promises  the shipped schedules keep their promise: the shipped schedules on the
#           systems of the guide's table of them (docs/book/src/chaos.md#shipped-schedules) (every system each expects unsafe, and those
#           it expects safe where hot-lock's short holds could not tell; the even splits are in
#           faults and split), with the workload their comments name (workloads/held-locks.toml;
#           pause-clients also with workloads/held-locks-unfenced.toml), --strict, 20 s cells
#           (isolate-leader 40 s, pause-node 30 s: two faults each), N seeded copies (default 5)
#           × both strategies = 2N cells per schedule, system and workload; prints how many
#           cells showed the `expect`, with lost updates and stale writes rejected
#           (OUT/promises.md)
#   kinds   every shipped schedule with the other lock kinds held across its faults
#           (workloads/held-rwlock.toml, held-permits.toml, held-reentrant.toml: 8 s holds on a
#           10 s lease), on every system and strategy the schedule and the kind apply to, one
#           seed, 20 s cells (pause-node 30 s; isolate-leader and split-even-20s 40 s), so that
#           each schedule's first fault lands inside every cell (lockbench run refuses a cell
#           that would see none)
# OUT defaults to results/chaos-matrix. Exit status: 1 if any cell expected safe was judged
# unsafe (lockbench run's own rule; in promises, --strict: also a cell expected unsafe judged
# safe, or an unknown verdict), else 0.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
repeats=5
duration=30s
only=all
out=results/chaos-matrix
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) profile=debug ;;
    --repeats) repeats=$2; shift ;;
    --duration) duration=$2; shift ;;
    --only) only=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "chaos-matrix: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
case "$only" in all|faults|pause|rates|split|promises|kinds) ;; *) echo "chaos-matrix: --only takes faults, pause, rates, split, promises or kinds, not '$only'" >&2; exit 2 ;; esac
command -v python3 >/dev/null || { echo "chaos-matrix: needs python3 for the table (apt-get install python3)" >&2; exit 2; }

if [ "$profile" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
bin="${CARGO_TARGET_DIR:-target}/$profile/lockbench"
"$bin" images
inputs="$out/inputs"
mkdir -p "$inputs"
status=0
# Locks held across the faults (pauses, failovers, restarts): a hot-lock hold (1-5 ms) ends
# long before a failover or a restart completes, so nothing could be granted twice under it.
cp workloads/held-locks.toml "$inputs/held-locks.toml"
run() { "$bin" run --duration "$duration" "$@" || status=1; }
# One schedule file per seed: each is a chaos coordinate of its own (name-sN), so one run
# (one cluster per system) plays them all.
seeded() { # schedule, then the flags of the files made
  local name=$1 i
  for i in $(seq 1 "$repeats"); do
    sed "s/^seed = .*/seed = $i/" "chaos/$name.toml" > "$inputs/$name-s$i.toml"
    printf -- '--chaos %s ' "$inputs/$name-s$i.toml"
  done
}

if [ "$only" = all ] || [ "$only" = faults ]; then
  run --out "$out/faults" --workload workloads/hot-lock.toml --chaos chaos/kill-leader.toml --chaos chaos/partition-halves.toml \
    --chaos chaos/partition-even.toml
  run --out "$out/faults" --workload workloads/hot-lock.toml --systems redis --chaos chaos/isolate-leader.toml
fi
if [ "$only" = all ] || [ "$only" = pause ]; then
  # Held locks, fenced and unfenced: a hot-lock hold (1-5 ms) is over before the pause lands
  # more often than not, and a paused waiter overlaps nobody.
  run --out "$out/pause" --clients-as processes --chaos chaos/pause-clients.toml \
    --workload "$inputs/held-locks.toml" --workload workloads/held-locks-unfenced.toml
fi
if [ "$only" = all ] || [ "$only" = rates ]; then
  all_systems="zookeeper etcd redis redlock postgres mariadb memcached"
  # The systems a schedule applies to: its `systems = [...]` line, or every system.
  systems_of() {
    local line
    line=$(grep -m1 '^systems *=' "$1" || true)
    if [ -z "$line" ]; then echo "$all_systems"; else echo "$line" | tr -d '[]",' | sed 's/^systems *= *//'; fi
  }
  for file in chaos/*.toml; do
    name=$(basename "$file" .toml)
    [ "$name" = none ] && continue
    d=20s extra=()
    case "$name" in
      pause-node) d=30s ;;
      isolate-leader|split-even-20s) d=40s ;;
      pause-clients) extra=(--clients-as processes) ;;
    esac
    for system in $(systems_of "$file"); do
      group="$out/rates/$name/$system"
      if [ -f "$group/complete" ]; then
        echo "chaos-matrix: rates $name × $system: done ($(cat "$group/complete")), skipped" >&2
        continue
      fi
      mkdir -p "$group"
      rc=0
      # stderr both on the terminal and in the group's folder; pipefail gives lockbench's exit.
      { "$bin" run --duration "$d" --repeat "$repeats" --out "$group" --systems "$system" \
          --workload "$inputs/held-locks.toml" --chaos "$file" "${extra[@]}" 2>&1 1>&3 3>&- |
          tee "$group/stderr.log" >&2; } 3>&1 || rc=$?
      case "$rc" in
        0|1) echo "exit $rc, $(date -u +%FT%TZ)" > "$group/complete"; [ "$rc" = 0 ] || status=1 ;;
        130) echo "chaos-matrix: interrupted in rates $name × $system; run again with the same OUT to resume" >&2; exit 130 ;;
        *) if grep -q "nothing to run" "$group/stderr.log"; then
             echo "nothing to run" > "$group/complete"
           else
             echo "chaos-matrix: rates $name × $system failed (exit $rc): not marked, runs again next time" >&2
             status=1
           fi ;;
      esac
    done
  done
  python3 - "$out/rates" <<'PY' | tee "$out/rates.md"
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "*", "latest", "summary.json"))):
    for a in json.load(open(path)).get("repeated", []):
        r = a.get("rates")
        if not r:
            continue
        u = r["unsafe_rate"]
        rate = f"{u['k']} of {u['n']} ({100 * u['low']:.0f}–{100 * u['high']:.0f} %)"
        classes = "; ".join(f"{k.replace('_', ' ')} {c['k']} of {c['n']}"
                            for k, c in r["classes"].items() if c["k"] > 0) or "none"
        rec = r.get("recovery") or {}
        recovery = (f"{rec['median_ms'] / 1000:.2f} s ({rec['min_ms'] / 1000:.2f}–{rec['max_ms'] / 1000:.2f})"
                    if rec.get("median_ms") is not None else "n/a")
        rows.append((a["id"]["chaos"], a["id"]["system"], a["id"]["strategy"],
                     a["safety"]["expected"], rate, r["unknown"], classes, recovery))
print("| chaos | system | strategy | expected | unsafe in (95 % interval) | unknown | findings by class | recovery median (range) |")
print("|---|---|---|---|---|---:|---|---|")
for row in rows:
    print("| " + " | ".join(str(v) for v in row) + " |")
PY
fi

if [ "$only" = all ] || [ "$only" = promises ]; then
  # Each schedule on the systems it expects unsafe, and on the systems it expects safe where a
  # hot-lock run could not tell (the holder had released long before the fault); --strict
  # fails a cell whose verdict is not its `expect`. 20 s cells, longer where the schedule needs
  # two faults in one cell.
  promise() { # systems, cell duration, schedule, extra flags
    local systems=$1 d=$2 name=$3; shift 3
    # shellcheck disable=SC2046
    "$bin" run --strict --duration "$d" --out "$out/promises" --systems "$systems" \
      --workload workloads/held-locks.toml "$@" $(seeded "$name") || status=1
  }
  promise redlock 20s redlock-restart-empty
  promise redlock 20s redlock-restart-delayed
  promise redis 20s clock-jump
  promise redlock 20s clock-jump-majority
  # Fenced (stale writes rejected) and unfenced (lost updates): 2N cells per system of each.
  promise zookeeper,etcd,redis,redlock 20s pause-clients --clients-as processes \
    --workload workloads/held-locks-unfenced.toml
  promise zookeeper,etcd,redis,redlock 40s isolate-leader
  promise redis 30s pause-node
  promise redis,redlock 20s kill-leader
  promise redis 20s bridge
  promise zookeeper,etcd,redlock 20s partition-halves
  promise zookeeper,etcd,redlock 20s mixed
  python3 benches/promise-rates.py "$out/promises" | tee "$out/promises.md"
fi

if [ "$only" = all ] || [ "$only" = kinds ]; then
  kinds() { # cell duration, then lockbench run's flags
    local d=$1; shift
    "$bin" run --duration "$d" --out "$out/kinds" --workload workloads/held-rwlock.toml \
      --workload workloads/held-permits.toml --workload workloads/held-reentrant.toml "$@" ||
      status=1
  }
  kinds 20s --chaos chaos/kill-leader.toml --chaos chaos/partition-halves.toml \
    --chaos chaos/partition-even.toml --chaos chaos/bridge.toml --chaos chaos/mixed.toml \
    --chaos chaos/clock-jump.toml --chaos chaos/clock-jump-majority.toml \
    --chaos chaos/redlock-restart-delayed.toml --chaos chaos/redlock-restart-empty.toml
  kinds 20s --clients-as processes --chaos chaos/pause-clients.toml
  kinds 30s --chaos chaos/pause-node.toml
  kinds 40s --chaos chaos/isolate-leader.toml --chaos chaos/split-even-20s.toml
fi

if [ "$only" = all ] || [ "$only" = split ]; then
  "$bin" run --out "$out/split" --systems zookeeper,etcd --chaos chaos/split-even-20s.toml \
    --workload workloads/hot-lock.toml \
    --clients 8 --duration 40s --repeat "$repeats" || status=1
  python3 benches/split-figures.py "$out/split/latest" | tee "$out/split.md"
fi

python3 - "$out" <<'PY' | tee "$out/matrix.md"
import glob, json, os, re, sys
from collections import defaultdict
out = sys.argv[1]
rows, rates = [], defaultdict(lambda: [0, 0, 0])
for path in sorted(glob.glob(os.path.join(out, "*", "2*", "cells", "*", "summary.json"))):
    s = json.load(open(path))
    f = s.get("safety") or {}
    o = f.get("overlaps", {})
    family = re.sub(r"-s\d+$", "", s["chaos"])
    part = path[len(out):].strip("/").split("/")[0]
    row = (part, s["system"], s["strategy"], s["workload"], s["chaos"], f.get("verdict", "?"),
           f.get("expected", "?"), "/".join(str(o.get(k, 0)) for k in
           ("granted_twice", "told_and_went_on", "expired_untold", "unknown")),
           f.get("lost_updates", 0), f.get("stale_accesses_rejected", 0),
           f.get("max_unavailable_ms", 0.0), s["acquisitions"])
    rows.append(row)
    r = rates[(s["system"], s["strategy"], s["workload"], family)]
    r[0] += 1
    r[1] += f.get("verdict") == "unsafe"
    r[2] += o.get("granted_twice", 0)
print("| part | system | strategy | workload | chaos | verdict | expected | overlaps gt/told/exp/unk | lost updates | stale rejected | longest unavailable ms | acquisitions |")
print("|---|---|---|---|---|---|---|---|---:|---:|---:|---:|")
for r in rows:
    print("| " + " | ".join(f"{v:.0f}" if isinstance(v, float) else str(v) for v in r) + " |")
print()
print("| system | strategy | workload | chaos | cells | unsafe cells | rate | granted twice (sum) |")
print("|---|---|---|---|---:|---:|---:|---:|")
for (system, strategy, workload, family), (n, unsafe, twice) in sorted(rates.items()):
    print(f"| {system} | {strategy} | {workload} | {family} | {n} | {unsafe} | {unsafe / n:.0%} | {twice} |")
PY
exit "$status"
