#!/bin/bash
# Runs one etcd member in the foreground.
#   LB_ETCD_NAME      this member's name, also its host name on the cluster network
#   LB_ETCD_CLUSTER   "name1=http://host1:2380,..." (the initial cluster)
#   LB_ETCD_HEARTBEAT_MS / LB_ETCD_ELECTION_MS   raft timing (default 100 / 1000)
#   LB_TLS_CA, LB_TLS_CERT, LB_TLS_KEY   PEM text (lockbench up --tls): also serve clients on
#                     https://0.0.0.0:2378, asking each for a certificate the CA signed
set -euo pipefail
name="${LB_ETCD_NAME:-etcd1}"
cluster="${LB_ETCD_CLUSTER:-$name=http://$name:2380}"
data=/data
[ -f "$data/.lockbench-wipe" ] && rm -rf "${data:?}"/* "$data/.lockbench-wipe"
mkdir -p "$data"
echo "lockbench-entrypoint: starting etcd name=$name"
# etcd resolves every peer URL at start-up: wait (bounded) until each name resolves.
IFS=',' read -ra entries <<< "$cluster"
for e in "${entries[@]}"; do
  host="${e#*//}"; host="${host%%:*}"
  for _ in $(seq 1 120); do getent hosts "$host" >/dev/null && break; sleep 0.5; done
done
state=new
[ -d "$data/etcd/member" ] && state=existing
listen=http://0.0.0.0:2379
advertise="http://$name:2379"
tls=()
if [ -n "${LB_TLS_CERT:-}" ]; then
  mkdir -p /tls
  printf '%s\n' "$LB_TLS_CA" > /tls/ca.pem
  printf '%s\n' "$LB_TLS_CERT" > /tls/server.pem
  (umask 077; printf '%s\n' "$LB_TLS_KEY" > /tls/server-key.pem)
  listen="$listen,https://0.0.0.0:2378"
  advertise="$advertise,https://$name:2378"
  tls=(--cert-file /tls/server.pem --key-file /tls/server-key.pem
       --client-cert-auth --trusted-ca-file /tls/ca.pem)
fi
exec etcd --name "$name" --data-dir "$data/etcd" \
  --listen-client-urls "$listen" --advertise-client-urls "$advertise" "${tls[@]}" \
  --listen-peer-urls http://0.0.0.0:2380 --initial-advertise-peer-urls "http://$name:2380" \
  --initial-cluster "$cluster" --initial-cluster-state "$state" \
  --initial-cluster-token lockbench \
  --heartbeat-interval "${LB_ETCD_HEARTBEAT_MS:-100}" --election-timeout "${LB_ETCD_ELECTION_MS:-1000}" \
  --logger zap --log-outputs stderr
