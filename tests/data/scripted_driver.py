#!/usr/bin/env python3
"""A scripted lockbench driver for the protocol's tests: an in-process lock table, and one
misbehaviour chosen by its first argument (normal, malformed, hang, crash, out-of-order, lost)
on the first acquire."""
import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
holders = {}
lost = set()
token = 0


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    req = json.loads(line)
    rid, op = req["id"], req["op"]
    print(f"request {line.strip()}", file=sys.stderr, flush=True)
    if op == "hello":
        send({"id": rid, "outcome": "ok", "protocol": 1, "version": "scripted-1"})
    elif op == "ping":
        send({"id": rid, "outcome": "ok"})
    elif op == "acquire":
        if mode == "malformed":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            continue
        if mode == "hang":
            continue
        if mode == "crash":
            sys.exit(3)
        if mode == "out-of-order":
            send({"id": rid + 1000, "outcome": "ok", "token": 1})
            continue
        key, client = req["key"], req["client"]
        if key in holders:
            send({"id": rid, "outcome": "fail", "error": "held", "requests": 1})
            continue
        token += 1
        holders[key] = client
        send({"id": rid, "outcome": "ok", "token": token, "requests": 1})
        if mode == "lost":
            lost.add((client, key))
            send({"event": "lease_lost", "client": client, "key": key, "why": "scripted"})
    elif op in ("read", "write"):
        if op == "write" and (req["client"], req["key"]) in lost:
            send({"id": rid, "outcome": "fail", "error": "lease lost: not writing"})
        else:
            send({"id": rid, "outcome": "ok"})
    elif op == "release":
        holders.pop(req["key"], None)
        lost.discard((req["client"], req["key"]))
        send({"id": rid, "outcome": "ok"})
