"""lockbench driver for kazoo's Lock: protocol 1 (docs/book/src/drivers.md)."""
import functools
import importlib.metadata
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout

import lockbench_driver as lb


class Kazoo(lb.Adapter):
    library_version = importlib.metadata.version("kazoo")

    def connect(self, hello):
        hosts = ",".join(hello["cluster"]["endpoints"])
        self.check = hello["settings"].get("check_lost", True)
        self.guard = threading.Lock()
        self.locks = {}  # (client, key) -> kazoo Lock held
        self.lost = set()  # (client, key) whose session ended while held
        self.zks = []
        for c in range(hello["clients"]):
            zk = KazooClient(hosts=hosts, timeout=hello["lease_ttl_ms"] / 1000)
            zk.add_listener(functools.partial(self.on_state, c))
            zk.start(timeout=30)
            self.zks.append(zk)

    def on_state(self, client, state):
        # kazoo calls listeners on its connection thread: no blocking here.
        if state != KazooState.LOST:
            return
        with self.guard:
            held = [k for (c, k) in self.locks if c == client]
            self.lost.update((client, k) for k in held)
        for key in held:
            self.emit_lost(client, key, "session expired (KazooState.LOST)")

    def acquire(self, client, key, timeout_s):
        lock = self.zks[client].Lock(key, identifier=f"client-{client}")
        try:
            lock.acquire(blocking=True, timeout=timeout_s)
        except LockTimeout:
            return False
        with self.guard:
            self.locks[(client, key)] = lock
            self.lost.discard((client, key))
        return True

    def release(self, client, key):
        with self.guard:
            lock = self.locks.pop((client, key), None)
            was_lost = (client, key) in self.lost
            self.lost.discard((client, key))
        if lock is None:
            return "not held"
        lock.release()
        return "the session that held it expired" if was_lost else None

    def before_write(self, client, key):
        if not self.check:
            return None
        if (client, key) in self.lost:
            return "lock lost: the session expired (KazooState.LOST)"
        state = self.zks[client].state
        if state != KazooState.CONNECTED:
            return f"connection {state}: the lock may be lost"
        return None

    def close(self):
        for zk in self.zks:
            try:
                zk.stop()
                zk.close()
            except Exception:
                pass


lb.serve(Kazoo())
