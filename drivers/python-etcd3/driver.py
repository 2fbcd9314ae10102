"""lockbench driver for python-etcd3's Lock: protocol 1 (docs/book/src/drivers.md)."""
import importlib.metadata
import math

import etcd3

import lockbench_driver as lb


class PythonEtcd3(lb.Adapter):
    library_version = importlib.metadata.version("etcd3")

    def connect(self, hello):
        self.ttl = max(1, math.ceil(hello["lease_ttl_ms"] / 1000))
        self.held = lb.Held()
        endpoints = [lb.split(e) for e in hello["cluster"]["endpoints"]]
        # python-etcd3 0.12 dials one endpoint: the clients are spread over the members, as
        # applications configured with different members would be.
        self.clients = []
        for c in range(hello["clients"]):
            host, port = endpoints[c % len(endpoints)]
            self.clients.append(etcd3.client(host=host, port=port, timeout=2))

    def acquire(self, client, key, timeout_s):
        lock = etcd3.Lock(key, ttl=self.ttl, etcd_client=self.clients[client])
        if not lock.acquire(timeout=timeout_s):
            return False
        self.held.put(client, key, lock)
        return True

    def release(self, client, key):
        lock = self.held.pop(client, key)
        if lock is None:
            return "not held"
        if not lock.release():
            return "the key was no longer this lock's (its lease expired)"
        return None

    def close(self):
        for c in self.clients:
            c.close()


lb.serve(PythonEtcd3())
