"""The table of verdicts and recovery times per server version, from run folders of chaos cells
(benches/versions-safety.sh): per system, version (as the server reported it) and schedule, the
verdict of each repetition (seed), how many were unsafe, and the recovery after the faults (each
fault window's `recovery_ms`, docs/book/src/results-schema.md#faults) as median and range over
every window of every repetition. A difference between versions is one that shows in every seed.

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
        recoveries = [w["recovery_ms"] for w in s.get("faults", [])
                      if w.get("started") and w.get("recovery_ms") is not None]
        groups[key].append((os.path.basename(os.path.dirname(path)),
                            (s.get("safety") or {}).get("verdict", "unknown"), recoveries))

print("| system | version | schedule | verdicts by seed | unsafe | recovery ms, median (range) |")
print("|---|---|---|---|---|---|")
for (system, version, chaos), cells in sorted(groups.items()):
    verdicts = [v for _, v, _ in sorted(cells)]
    rec = [r for _, _, rs in cells for r in rs]
    if rec:
        recovery = f"{statistics.median(rec):.0f} ({min(rec):.0f}-{max(rec):.0f})"
    else:
        recovery = "-"
    unsafe = sum(1 for v in verdicts if v == "unsafe")
    print(f"| {system} | {version} | {chaos} | {' '.join(verdicts)} | {unsafe} of {len(verdicts)} | {recovery} |")
