"""lockbench driver for pottery's Redlock: protocol 1 (docs/book/src/drivers.md)."""
import importlib.metadata

from pottery import Redlock, ReleaseUnlockedLock
from redis import Redis

import lockbench_driver as lb


class Pottery(lb.Adapter):
    library_version = importlib.metadata.version("pottery")

    def connect(self, hello):
        self.ttl = hello["lease_ttl_ms"] / 1000
        self.held = lb.Held()
        # One connection pool a master for each client, as separate application processes
        # would have.
        self.masters = []
        for _ in range(hello["clients"]):
            self.masters.append(frozenset(
                Redis(host=h, port=p, socket_timeout=2, socket_connect_timeout=2)
                for h, p in map(lb.split, hello["cluster"]["endpoints"])
            ))

    def acquire(self, client, key, timeout_s):
        lock = Redlock(key=key, masters=self.masters[client], auto_release_time=self.ttl)
        if not lock.acquire(blocking=True, timeout=timeout_s):
            return False
        self.held.put(client, key, lock)
        return True

    def release(self, client, key):
        lock = self.held.pop(client, key)
        if lock is None:
            return "not held"
        try:
            lock.release()
        except ReleaseUnlockedLock as e:
            return f"ReleaseUnlockedLock: {e}"
        return None


lb.serve(Pottery())
