#!/usr/bin/env python3
"""Per shipped schedule and system: how many cells showed the verdict the schedule expects.

    benches/promise-rates.py DIR...   (run folders, or folders holding them: chaos-matrix's
                                       OUT/promises)

Seeded copies (name-sN) count as their schedule. A cell whose verdict differs from its
expected one (unsafe judged safe: "not exposed"; or unknown) does not count.
"""
import glob
import json
import os
import re
import sys
from collections import defaultdict

cells = defaultdict(lambda: [0, 0, 0])
for d in sys.argv[1:] or ["results/latest"]:
    for pattern in ("cells/*/summary.json", "2*/cells/*/summary.json"):
        for path in glob.glob(os.path.join(d, pattern)):
            s = json.load(open(path))
            f = s.get("safety") or {}
            r = cells[(re.sub(r"-s\d+$", "", s.get("chaos") or "none"), s["system"])]
            r[0] += 1
            r[1] += f.get("verdict") is not None and f.get("verdict") == f.get("expected")
            r[2] += (f.get("overlaps") or {}).get("granted_twice", 0) > 0
print("| schedule | system | cells | showed `expect` | rate | cells with a lock granted twice |")
print("|---|---|---:|---:|---:|---:|")
for (chaos, system), (n, shown, twice) in sorted(cells.items()):
    print(f"| {chaos} | {system} | {n} | {shown} | {shown}/{n} | {twice} |")
