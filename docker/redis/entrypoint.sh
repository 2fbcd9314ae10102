#!/bin/bash
# Runs one Redis server or Sentinel in the foreground, or Valkey's (valkey-server and
# valkey-sentinel, run when the image has no redis-server: same options, same ports).
#   REDIS_ROLE      master | replica | sentinel (default master)
#   REDIS_HOST      this node's host name on the cluster network (announced to peers)
#   REDIS_MASTER    the initial master's host name (replica, sentinel)
#   REDIS_PERSIST   none | aof (default none: a restart loses every key, as in the Redlock spec)
#   SENTINEL_QUORUM
#   SENTINEL_DOWN_MS, SENTINEL_FAILOVER_MS   down-after-milliseconds and failover-timeout
#                   (default 30000 and 180000, Sentinel's own); lockbench passes its own from
#                   src/service/redis/settings.rs, which says why, unless a run asks for
#                   --server-defaults
#   LB_TLS_CA, LB_TLS_CERT, LB_TLS_KEY   PEM text (lockbench up --tls): a data node also serves
#                   clients on tls-port 6380, asking each for a certificate the CA signed
#                   (replication and Sentinel stay on the plain port)
set -euo pipefail
role="${REDIS_ROLE:-master}"
host="${REDIS_HOST:-$(hostname)}"
data=/data
[ -f "$data/.lockbench-wipe" ] && rm -rf "${data:?}"/* "$data/.lockbench-wipe"
mkdir -p "$data"
server=redis-server
sentinel=redis-sentinel
if ! command -v redis-server >/dev/null 2>&1 && command -v valkey-server >/dev/null 2>&1; then
  server=valkey-server
  sentinel=valkey-sentinel
fi
echo "lockbench-entrypoint: starting $server role=$role host=$host"
wait_for() { for _ in $(seq 1 120); do getent hosts "$1" >/dev/null && return 0; sleep 0.5; done; }
if [ "$role" = sentinel ]; then
  conf="$data/sentinel.conf"
  if [ ! -f "$conf" ]; then
    wait_for "${REDIS_MASTER:?REDIS_MASTER is required for a sentinel}"
    cat > "$conf" <<CFG
port 26379
protected-mode no
dir $data
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $host
sentinel monitor mymaster $REDIS_MASTER 6379 ${SENTINEL_QUORUM:-2}
sentinel down-after-milliseconds mymaster ${SENTINEL_DOWN_MS:-30000}
sentinel failover-timeout mymaster ${SENTINEL_FAILOVER_MS:-180000}
sentinel parallel-syncs mymaster 1
CFG
  fi
  exec "$sentinel" "$conf"
fi
persist=(--save "" --appendonly no)
if [ "${REDIS_PERSIST:-none}" = aof ]; then
  persist=(--save "" --appendonly yes --appendfsync always)
fi
args=(--port 6379 --bind 0.0.0.0 --protected-mode no --dir "$data" "${persist[@]}"
      --replica-announce-ip "$host" --daemonize no)
if [ -n "${LB_TLS_CERT:-}" ]; then
  mkdir -p /tls
  printf '%s\n' "$LB_TLS_CA" > /tls/ca.pem
  printf '%s\n' "$LB_TLS_CERT" > /tls/server.pem
  (umask 077; printf '%s\n' "$LB_TLS_KEY" > /tls/server-key.pem)
  args+=(--tls-port 6380 --tls-cert-file /tls/server.pem --tls-key-file /tls/server-key.pem
         --tls-ca-cert-file /tls/ca.pem --tls-auth-clients yes)
fi
if [ "$role" = replica ]; then
  wait_for "${REDIS_MASTER:?REDIS_MASTER is required for a replica}"
  # After a failover Sentinel rewrites the config of the node it reconfigures; a restarted
  # node starts as a replica of the initial master and is redirected by Sentinel.
  args+=(--replicaof "$REDIS_MASTER" 6379)
fi
exec "$server" "${args[@]}"
