"""lockbench driver for redis-py's Lock: protocol 1 (docs/book/src/drivers.md)."""
import json
import sys
import threading

import redis
from redis.sentinel import Sentinel

out = threading.Lock()
locks = {}  # (client, key) -> redis.lock.Lock
conn = None


def send(obj):
    with out:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def connect(hello):
    c = hello["cluster"]
    if not c["sentinel_endpoints"]:
        host, port = c["endpoints"][0].rsplit(":", 1)
    else:
        sentinels = [tuple(e.rsplit(":", 1)) for e in c["sentinel_endpoints"]]
        sentinel = Sentinel([(h, int(p)) for h, p in sentinels], socket_timeout=2)
        host, port = sentinel.discover_master(c.get("master_name") or "mymaster")
        # Sentinel names the master as the cluster's network knows it: map it to this machine.
        host, port = c["address_map"].get(host, f"{host}:{port}").rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=2)


def handle(req, ttl):
    global conn
    rid, op = req["id"], req["op"]
    try:
        if op == "acquire":
            lock = conn.lock(req["key"], timeout=ttl, thread_local=False)
            if lock.acquire(blocking=True, blocking_timeout=req["timeout_ms"] / 1000):
                locks[(req["client"], req["key"])] = lock
                send({"id": rid, "outcome": "ok"})
            else:
                send({"id": rid, "outcome": "fail", "error": "timed out"})
        elif op == "release":
            lock = locks.pop((req["client"], req["key"]))
            try:
                lock.release()
                send({"id": rid, "outcome": "ok"})
            except redis.exceptions.LockNotOwnedError as e:
                send({"id": rid, "outcome": "fail", "error": str(e)})
        else:  # read, write: redis-py does not tell its users to check before either
            send({"id": rid, "outcome": "ok"})
    except redis.exceptions.ConnectionError as e:
        send({"id": rid, "outcome": "info", "error": f"connection: {e}"})
        conn = connect(hello)


hello = None
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "hello":
        hello = req
        conn = connect(hello)
        send({"id": req["id"], "outcome": "ok", "protocol": 1, "version": redis.__version__})
    elif req["op"] == "ping":
        send({"id": req["id"], "outcome": "ok"})
    else:
        ttl = hello["lease_ttl_ms"] / 1000
        threading.Thread(target=handle, args=(req, ttl), daemon=True).start()
