#!/bin/bash
# Runs one PostgreSQL server in the foreground, as a primary or a streaming replica.
#   PG_ROLE    primary | replica: what an EMPTY node becomes (default primary)
#   PG_HOST    this node's host name on the cluster network
#   PG_PEERS   the other nodes' host names, space-separated
#   PG_CONNECTION_CHECK  client_connection_check_interval (default: not written, so 0: none)
#   PG_KEEPALIVES_IDLE, PG_KEEPALIVES_INTERVAL, PG_KEEPALIVES_COUNT  tcp_keepalives_* in s
#              (default: not written, so the system's)
# lockbench passes those from src/service/postgres/settings.rs, which says why, unless a run asks
# for --server-defaults. They are written when a primary is made (initdb); a replica copies
# them with its primary's data.
# At every start, whatever PG_ROLE says: if a peer answers as a primary (not in recovery), this
# node becomes its replica, keeping its data when it already replicates from that peer and
# re-cloning it (pg_basebackup) otherwise (an old primary after a promotion). If no peer is a
# primary and the data directory holds a cluster, it starts as it is; if it is empty, a primary
# runs initdb and a replica waits for a primary to clone.
set -euo pipefail
role="${PG_ROLE:-primary}"
host="${PG_HOST:-$(hostname)}"
peers="${PG_PEERS:-}"
# The server's programs: the image holds one major version's, /usr/lib/postgresql/<major>/bin.
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ ! -x "$bin/postgres" ]; then
  echo "lockbench-entrypoint: no PostgreSQL server under /usr/lib/postgresql" >&2
  exit 1
fi
data=/data
pgdata=$data/pg
mkdir -p "$data"
[ -f "$data/.lockbench-wipe" ] && rm -rf "${data:?}"/* "$data/.lockbench-wipe"
echo "lockbench-entrypoint: starting postgres role=$role host=$host peers=$peers"
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
mkdir -p /var/run/postgresql && chown postgres:postgres /var/run/postgresql

# The peer that answers as a primary, if any.
find_primary() {
  local p
  for p in $peers; do
    getent hosts "$p" >/dev/null || continue
    "$bin/pg_isready" -q -h "$p" -p 5432 -U postgres -t 1 || continue
    if [ "$(timeout 3 psql -h "$p" -U postgres -d postgres -XAtqc 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# Appends "$1 = $2" to postgresql.conf, unless $2 is empty (the server's default then stands).
put() { [ -z "$2" ] || echo "$1 = $2" >> "$pgdata/postgresql.conf"; }

configure() {
  cat >> "$pgdata/postgresql.conf" <<CFG
listen_addresses = '*'
port = 5432
max_connections = 400
wal_level = replica
max_wal_senders = 10
wal_keep_size = 256MB
hot_standby = on
wal_receiver_status_interval = 1s
log_line_prefix = '%m [%p] '
CFG
  put client_connection_check_interval "${PG_CONNECTION_CHECK:-}"
  put tcp_keepalives_idle "${PG_KEEPALIVES_IDLE:-}"
  put tcp_keepalives_interval "${PG_KEEPALIVES_INTERVAL:-}"
  put tcp_keepalives_count "${PG_KEEPALIVES_COUNT:-}"
  cat >> "$pgdata/pg_hba.conf" <<HBA
host replication all 0.0.0.0/0 trust
host all all 0.0.0.0/0 trust
HBA
}

clone_from() {
  echo "lockbench-entrypoint: cloning $1 (pg_basebackup)"
  rm -rf "$pgdata"
  mkdir -p "$pgdata" && chown postgres:postgres "$pgdata" && chmod 0700 "$pgdata"
  as_pg "$bin/pg_basebackup" -h "$1" -p 5432 -U postgres -D "$pgdata" -R -X stream \
    --checkpoint=fast
}

# Whether this data directory is a replica of $1 (standby.signal, primary_conninfo names it).
replica_of() {
  [ -f "$pgdata/standby.signal" ] || return 1
  grep -q "host=$1 " "$pgdata/postgresql.auto.conf" 2>/dev/null \
    || grep -q "host=''$1''" "$pgdata/postgresql.auto.conf" 2>/dev/null
}

while true; do
  if primary=$(find_primary); then
    if [ -f "$pgdata/PG_VERSION" ] && replica_of "$primary"; then
      echo "lockbench-entrypoint: replica of $primary, keeping its data"
    elif ! clone_from "$primary"; then
      echo "lockbench-entrypoint: cloning $primary failed, trying again"
      sleep 1
      continue
    fi
    break
  elif [ -f "$pgdata/PG_VERSION" ]; then
    echo "lockbench-entrypoint: no primary among the peers, starting the data as it is"
    break
  elif [ "$role" = primary ]; then
    echo "lockbench-entrypoint: initdb"
    rm -rf "$pgdata"
    mkdir -p "$pgdata" && chown postgres:postgres "$pgdata" && chmod 0700 "$pgdata"
    as_pg "$bin/initdb" -A trust -U postgres -D "$pgdata" >/dev/null
    configure
    break
  fi
  echo "lockbench-entrypoint: waiting for a primary among: $peers"
  sleep 0.5
done
chown -R postgres:postgres "$pgdata"
chmod 0700 "$pgdata"
# A SIGKILLed server leaves its pid files; no server runs in this container now.
rm -f "$pgdata/postmaster.pid" /var/run/postgresql/.s.PGSQL.5432.lock
exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$bin/postgres" -D "$pgdata"
