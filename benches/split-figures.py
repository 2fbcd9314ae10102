"""The figures of issue 17's split acceptance from a run folder of split cells (one fault window
each): per cell the verdict, acquisitions whose outcome stayed unknown (`info`), the most
failed acquisitions of one client from the split's effect to its heal, the requests per
client-second while the split lasted (each acquisition's requests spread evenly over its life),
and recovery after the heal: the cluster's share (the heal's end → the first outcome only the
cluster could give: an acquire or release `ok`, or a `fail` `withdrawn`) and the clients' share
(→ the first grant). Then the median per system and strategy.

    python3 benches/split-figures.py RUN_FOLDER
"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

run = sys.argv[1]
rows = []
for cell in sorted(glob.glob(os.path.join(run, "cells", "*"))):
    summary = json.load(open(os.path.join(cell, "summary.json")))
    events = [json.loads(line) for line in open(os.path.join(cell, "history.jsonl"))]
    windows = [w for w in summary.get("faults", []) if w["kind"] == "partition" and w["started"]]
    if not windows or windows[0]["end_us"] is None:
        continue
    w = windows[0]
    start = w.get("effect_us") or w["start_us"]
    end = w["end_us"]
    clients = summary["clients"]
    invoked, failed, requests = {}, defaultdict(int), 0.0
    for e in events:
        if e["op"] != "acquire":
            continue
        p = e["process"]
        if e["kind"] == "invoke":
            invoked[p] = e["t_us"]
            continue
        t0 = invoked.get(p, e["t_us"])
        life = max(e["t_us"] - t0, 1)
        inside = max(0, min(e["t_us"], end) - max(t0, start))
        requests += (e.get("requests") or 0) * inside / life
        if e["kind"] in ("fail", "info") and start <= e["t_us"] <= end:
            failed[p] += 1
    answers = [e["t_us"] for e in events if e["t_us"] >= end and e["op"] in ("acquire", "release")
               and (e["kind"] == "ok" or e.get("error_kind") == "withdrawn")]
    grants = [e["t_us"] for e in events if e["t_us"] >= end and e["op"] == "acquire" and e["kind"] == "ok"]
    server = (min(answers) - end) / 1e3 if answers else None
    first = (min(grants) - end) / 1e3 if grants else None
    unknown = sum(1 for e in events if e["op"] == "acquire" and e["kind"] == "info")
    split_s = (end - start) / 1e6
    rows.append(dict(cell=os.path.basename(cell), system=summary["system"], strategy=summary["strategy"],
                     verdict=summary["safety"]["verdict"], unknown=unknown,
                     failed=max(failed.values(), default=0), split_s=split_s,
                     rate=requests / clients / split_s, recovery=first, server=server,
                     client=None if first is None or server is None else first - server))

def ms(v):
    return "-" if v is None else f"{v:.0f}"

print("| cell | verdict | info acquisitions | most failed of one client | split s | requests / client-s | recovery ms | cluster's share ms | clients' share ms |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['cell']} | {r['verdict']} | {r['unknown']} | {r['failed']} | {r['split_s']:.1f} | "
          f"{r['rate']:.2f} | {ms(r['recovery'])} | {ms(r['server'])} | {ms(r['client'])} |")
print()
print("| system | strategy | cells | safe | median recovery ms | median cluster's share ms | median clients' share ms | most requests / client-s |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
groups = defaultdict(list)
for r in rows:
    groups[(r["system"], r["strategy"])].append(r)
for (system, strategy), rs in sorted(groups.items()):
    med = lambda k: ms(statistics.median([r[k] for r in rs if r[k] is not None])) if any(r[k] is not None for r in rs) else "-"
    print(f"| {system} | {strategy} | {len(rs)} | {sum(r['verdict'] == 'safe' for r in rs)} | "
          f"{med('recovery')} | {med('server')} | {med('client')} | {max(r['rate'] for r in rs):.2f} |")
