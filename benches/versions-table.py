"""The table of verdicts and recovery times per server version, from run folders of chaos cells
(benches/versions-safety.sh): per system, version (as the server reported it) and schedule, the
verdict of each repetition (seed), how many were unsafe, and two times over every fault window of
every repetition, as median and range (docs/book/src/results-schema.md#faults): the first grant
after the fault took effect (`first_grant_ms`: a failover's or an expiry's cost) and the first
grant after the fault ended (`recovery_ms`: the heal's or the restart's; absent when the lock was
granted again before the end and no grant followed it inside the cell). A difference between
versions is one that shows in every seed.

    python3 benches/versions-table.py RUN_FOLDER...
"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

groups = defaultdict(list)
for run in sys.argv[1:]:
    for path in sorted(glob.glob(os.path.join(run, "cells", "*", "summary.json"))):
        s = json.load(open(path))
        if not s.get("chaos") or s["chaos"] == "none":
            continue
        key = (s["system"], s.get("server_version") or s.get("version") or "?", s["chaos"])
        started = [w for w in s.get("faults", []) if w.get("started")]
        times = {f: [w[f] for w in started if w.get(f) is not None]
                 for f in ("first_grant_ms", "recovery_ms")}
        groups[key].append((os.path.basename(os.path.dirname(path)),
                            (s.get("safety") or {}).get("verdict", "unknown"), times))


def spread(values):
    if not values:
        return "-"
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


print("| system | version | schedule | verdicts by seed | unsafe | first grant after the effect, ms | first grant after the end, ms |")
print("|---|---|---|---|---|---|---|")
for (system, version, chaos), cells in sorted(groups.items()):
    verdicts = [v for _, v, _ in sorted(cells)]
    first = [t for _, _, ts in cells for t in ts["first_grant_ms"]]
    after = [t for _, _, ts in cells for t in ts["recovery_ms"]]
    unsafe = sum(1 for v in verdicts if v == "unsafe")
    print(f"| {system} | {version} | {chaos} | {' '.join(verdicts)} | {unsafe} of {len(verdicts)} "
          f"| {spread(first)} | {spread(after)} |")
