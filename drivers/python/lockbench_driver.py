"""The driver protocol, version 1 (docs/book/src/drivers.md), for lockbench's shipped Python
drivers.

A driver names its library in an adapter (a subclass of `Adapter`): how to connect, take, give
back and, where the library's documentation tells its users to, check a lock before writing.
`serve` reads lockbench's requests from stdin, runs each on a thread of its own (an acquisition
blocks; answers to different clients may come in any order), answers on stdout and sends
`lease_lost` when the adapter reports a loss. Nothing else is written to stdout.
"""

import json
import sys
import threading
import traceback

PROTOCOL = 1


class Unknown(Exception):
    """Raised by an adapter when it cannot tell whether the operation happened: answered
    `info`. Any other exception is taken as unknown too."""


class Adapter:
    """One library's side of the protocol. `emit_lost(client, key, why)` is set by `serve`
    before `connect`: call it when the library says a held lock is lost."""

    library_version = "unknown"
    emit_lost = None

    def connect(self, hello):
        """Connects `hello["clients"]` clients to `hello["cluster"]`."""
        raise NotImplementedError

    def acquire(self, client, key, timeout_s):
        """Takes `key` for `client`, waiting at most `timeout_s`. Returns False on a timeout,
        True on a grant, or a dict of the grant's extra fields (`token`, `requests`,
        `wakeups`) where the library shows them."""
        raise NotImplementedError

    def release(self, client, key):
        """Gives `key` back. Returns None when it happened, or why it certainly did not."""
        raise NotImplementedError

    def before_write(self, client, key):
        """None when the application would write now; otherwise why it declines (it saw its
        lock lost). The default writes, as a library that tells its users no check does."""
        return None

    def close(self):
        """lockbench is done: end the sessions."""


class Held:
    """The locks a driver's clients hold, by (client, key), safe across request threads."""

    def __init__(self):
        self._guard = threading.Lock()
        self._locks = {}

    def put(self, client, key, lock):
        with self._guard:
            self._locks[(client, key)] = lock

    def pop(self, client, key):
        """The lock `client` holds on `key`, no longer held; None if it held none."""
        with self._guard:
            return self._locks.pop((client, key), None)


_out = threading.Lock()


def send(obj):
    with _out:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def _handle(adapter, req):
    rid, op, client, key = req["id"], req["op"], req.get("client"), req.get("key")
    try:
        if op == "acquire":
            got = adapter.acquire(client, key, req["timeout_ms"] / 1000)
            if got is False:
                send({"id": rid, "outcome": "fail", "error": "timed out"})
            else:
                answer = {"id": rid, "outcome": "ok"}
                if isinstance(got, dict):
                    answer.update(got)
                send(answer)
        elif op in ("release", "write"):
            if op == "release":
                why = adapter.release(client, key)
            else:
                why = adapter.before_write(client, key)
            if why is None:
                send({"id": rid, "outcome": "ok"})
            else:
                send({"id": rid, "outcome": "fail", "error": why})
        elif op == "read":
            send({"id": rid, "outcome": "ok"})
        else:
            send({"id": rid, "outcome": "fail", "error": f"unknown op {op!r}"})
    except Exception as e:  # the library raised: whether it happened is unknown
        print(f"{op} {key} (client {client}): {traceback.format_exc()}", file=sys.stderr)
        send({"id": rid, "outcome": "info", "error": f"{type(e).__name__}: {e}"})


def serve(adapter):
    """Answers lockbench's requests until stdin ends."""
    adapter.emit_lost = lambda client, key, why: send(
        {"event": "lease_lost", "client": client, "key": key, "why": why}
    )
    connected = False
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "hello":
            try:
                adapter.connect(req)
                connected = True
            except Exception as e:
                print(traceback.format_exc(), file=sys.stderr)
                send({"id": req["id"], "outcome": "fail", "error": f"connect: {e}"})
                continue
            send({"id": req["id"], "outcome": "ok", "protocol": PROTOCOL,
                  "version": adapter.library_version})
        elif req["op"] == "ping":
            send({"id": req["id"], "outcome": "ok"})
        else:
            threading.Thread(target=_handle, args=(adapter, req), daemon=True).start()
    if connected:
        adapter.close()


def split(endpoint):
    """'host:port' as (host, port)."""
    host, port = endpoint.rsplit(":", 1)
    return host, int(port)
