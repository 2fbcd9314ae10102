"""The figures of the even split (chaos/split-even-20s), from a run folder of split cells (one partition
window each), as each cell's summary.json states them: the verdict, acquisitions whose outcome
stayed unknown (acquire `info` events in the history; an unanswered release may stay `info`:
its holder went on, and its janitor retries it), the most failed acquisitions of one client and the requests
per client-second while the split was in effect, and the recovery after the heal with its
cluster's and clients' shares (docs/book/src/results-schema.md#faults). Then per system and strategy:
cells, safe cells, and the medians.

    python3 benches/split-figures.py RUN_FOLDER
"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "cells", "*", "summary.json"))):
    s = json.load(open(path))
    windows = [w for w in s.get("faults", []) if w["kind"] == "partition" and w["started"]]
    if not windows:
        continue
    w = windows[0]
    history = os.path.join(os.path.dirname(path), "history.jsonl")
    unknown = sum(1 for line in open(history)
                  if '"op":"acquire"' in line and '"kind":"info"' in line)
    rows.append(dict(cell=os.path.basename(os.path.dirname(path)), system=s["system"],
                     strategy=s["strategy"], verdict=s["safety"]["verdict"],
                     unknown=unknown, failed=w.get("most_failed_per_client"),
                     rate=w.get("requests_per_client_s"), recovery=w.get("recovery_ms"),
                     cluster=w.get("recovery_cluster_ms"), clients=w.get("recovery_clients_ms"),
                     applying=w.get("applying_ms"), inside=w.get("acquisitions")))


def num(v, digits=0):
    return "-" if v is None else f"{v:.{digits}f}"


print("| cell | verdict | unknown acquisitions | grants in split | most failed of one client | requests / client-s | applying ms | recovery ms | cluster's share | clients' share |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['cell']} | {r['verdict']} | {r['unknown']} | {r['inside']} | {r['failed']} | "
          f"{num(r['rate'], 2)} | {num(r['applying'])} | {num(r['recovery'])} | "
          f"{num(r['cluster'])} | {num(r['clients'])} |")
print()
print("| system | strategy | cells | safe | unknown acquisitions | most failed of one client | most requests / client-s | median recovery ms | median cluster's share | median clients' share |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
groups = defaultdict(list)
for r in rows:
    groups[(r["system"], r["strategy"])].append(r)
for (system, strategy), rs in sorted(groups.items()):
    def med(k):
        vs = [r[k] for r in rs if r[k] is not None]
        return num(statistics.median(vs)) if vs else "-"
    print(f"| {system} | {strategy} | {len(rs)} | {sum(r['verdict'] == 'safe' for r in rs)} | "
          f"{sum(r['unknown'] for r in rs)} | {max(r['failed'] or 0 for r in rs)} | "
          f"{max(r['rate'] or 0 for r in rs):.2f} | {med('recovery')} | {med('cluster')} | {med('clients')} |")
