#!/usr/bin/env python3
"""Per shipped schedule, system and workload: how many cells showed the verdict the schedule
expects, and what the protected register saw.

    benches/promise-rates.py DIR...   (run folders, or folders holding them: chaos-matrix's
                                       OUT/promises)

Seeded copies (name-sN) count as their schedule. A cell whose verdict differs from its
expected one (unsafe judged safe: "not exposed"; or unknown) does not count. The last columns
list each cell's lost updates (unfenced register) and stale accesses rejected (fenced), in
the cells' folder order.
"""
import glob
import json
import os
import re
import sys
from collections import defaultdict

cells = defaultdict(lambda: [0, 0, 0, [], []])
for d in sys.argv[1:] or ["results/latest"]:
    for pattern in ("cells/*/summary.json", "2*/cells/*/summary.json"):
        for path in sorted(glob.glob(os.path.join(d, pattern))):
            s = json.load(open(path))
            f = s.get("safety") or {}
            chaos = re.sub(r"-s\d+$", "", s.get("chaos") or "none")
            r = cells[(chaos, s["system"], s.get("workload", "?"))]
            r[0] += 1
            r[1] += f.get("verdict") is not None and f.get("verdict") == f.get("expected")
            r[2] += (f.get("overlaps") or {}).get("granted_twice", 0) > 0
            r[3].append(f.get("lost_updates", 0))
            r[4].append(f.get("stale_accesses_rejected", 0))
print("| schedule | system | workload | cells | showed `expect` | rate | cells with a lock granted twice "
      "| lost updates per cell | stale rejected per cell |")
print("|---|---|---|---:|---:|---:|---:|---|---|")
for (chaos, system, workload), (n, shown, twice, lost, stale) in sorted(cells.items()):
    print(f"| {chaos} | {system} | {workload} | {n} | {shown} | {shown}/{n} | {twice} "
          f"| {' '.join(map(str, lost))} | {' '.join(map(str, stale))} |")
