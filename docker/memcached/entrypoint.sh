#!/bin/bash
# Runs one memcached server in the foreground, as user memcache. Memcached keeps nothing on
# disk: a restarted node has forgotten every key (locks and fencing counters alike).
#   MEMCACHED_MEMORY_MB  item memory in MiB (default 64)
set -euo pipefail
echo "lockbench-entrypoint: starting memcached"
exec memcached -u memcache -p 11211 -l 0.0.0.0 -m "${MEMCACHED_MEMORY_MB:-64}"
