#!/bin/bash
# Runs one MariaDB server (primary or GTID replica) in the foreground.
#   MARIADB_ROLE       primary | replica: the role of a node that starts with no data
#   MARIADB_HOST       this node's host name on the cluster network
#   MARIADB_PEERS      every server's host name (this one's too), space-separated
#   MARIADB_SERVER_ID  this node's server id (1, 2, ...)
#
# At every start: if a peer answers as a writable primary (read_only = 0, not a replica),
# this node becomes its replica (its own data thrown away unless it already replicates that
# peer: a primary that was failed over from has forked and must start again from the new
# primary's binlog, which holds everything since it has log-slave-updates). If none does and
# data exists, it starts as it was (a replica keeps its replication settings). With no data:
# a primary installs and takes writes, a replica waits for a primary.
#
# Users and the `lockbench` database are made on every node with sql_log_bin = 0 (nothing of
# them is replicated, so each node's own copy never clashes with its primary's); what clients
# write (the fencing sequence) is replicated. `lb` (all privileges) is the operator's and
# replication's user; `lbclient` has the lockbench database only, so read_only refuses its
# writes on a replica.
set -uo pipefail
role="${MARIADB_ROLE:-primary}"
host="${MARIADB_HOST:-$(hostname)}"
peers="${MARIADB_PEERS:-}"
sid="${MARIADB_SERVER_ID:-1}"
# MariaDB 11's client takes MARIADB_HOST from the environment as the server to reach (over TCP,
# even beside --socket): these variables are read above and stay out of the programs' way.
unset MARIADB_ROLE MARIADB_HOST MARIADB_PEERS MARIADB_SERVER_ID
data=/data
datadir=$data/mysql
sock=/run/mysqld/mysqld.sock
pw=lockbench
[ -f "$data/.lockbench-wipe" ] && rm -rf "${data:?}"/* "$data/.lockbench-wipe"
mkdir -p "$data" /run/mysqld
chown mysql:mysql "$data" /run/mysqld
echo "lockbench-entrypoint: starting mariadb role=$role host=$host server_id=$sid"

# Prints the first peer that answers as a writable primary (read_only = 0, no replication).
find_primary() {
  local p out
  for p in $peers; do
    [ "$p" = "$host" ] && continue
    out=$(mariadb -h "$p" -ulb -p"$pw" --connect-timeout=1 -N -B \
      -e "SELECT @@read_only; SHOW ALL SLAVES STATUS" 2>/dev/null) || continue
    if [ "$out" = "0" ]; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# A fresh install takes a server id no install had: a replica skips the events that carry its
# own id (they would be its own, come back round), so a node that starts again from scratch
# under its old id would skip everything it wrote as a primary. The first primary is node N's
# id N; an install that replicates takes N + 100 x a random number (1 to 2^20).
install() {
  rm -rf "$datadir"
  if [ -n "$primary" ]; then
    echo $(( sid + 100 * ((RANDOM << 5 ^ RANDOM) % 1048576 + 1) )) > "$data/server-id"
  else
    echo "$sid" > "$data/server-id"
  fi
  mariadb-install-db --user=mysql --datadir="$datadir" --skip-test-db \
    --auth-root-authentication-method=socket >/dev/null 2>&1 || {
    echo "lockbench-entrypoint: mariadb-install-db failed" >&2
    exit 1
  }
}

primary=""
if primary=$(find_primary); then
  if [ -f "$datadir/master.info" ] && grep -qx "$primary" "$datadir/master.info"; then
    echo "lockbench-entrypoint: $primary is the primary, and this node replicates it already"
  else
    echo "lockbench-entrypoint: $primary is the primary: this node starts again as its replica"
    install
  fi
elif [ -d "$datadir/mysql" ]; then
  echo "lockbench-entrypoint: no primary among the peers; starting on the data kept"
  primary=""
elif [ "$role" = replica ]; then
  echo "lockbench-entrypoint: waiting for a primary among: $peers"
  until primary=$(find_primary); do sleep 0.3; done
  echo "lockbench-entrypoint: $primary is the primary"
  install
else
  install
fi

sid=$(cat "$data/server-id" 2>/dev/null || echo "$sid")
args=(--user=mysql --datadir="$datadir" --socket="$sock" --port=3306
      --bind-address=0.0.0.0 --skip-name-resolve --server-id="$sid"
      --log-bin=mariadb-bin --relay-log=relay-bin --log-slave-updates --gtid-strict-mode=1 --binlog-format=ROW
      --sync-binlog=1 --max-connections=2000 --innodb-buffer-pool-size=64M
      --skip-slave-start --log-warnings=1)
# A node that replicates (a fresh replica, or one kept whose settings name a primary) starts
# read-only; a primary, or a promoted replica (RESET SLAVE ALL removed its settings), takes writes.
if [ -n "$primary" ] || [ -f "$datadir/master.info" ]; then
  args+=(--read-only=1)
fi
mariadbd "${args[@]}" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT
up=""
for _ in $(seq 1 600); do
  mariadb -uroot --socket="$sock" -e "SELECT 1" >/dev/null 2>&1 && { up=1; break; }
  kill -0 $pid 2>/dev/null || { echo "lockbench-entrypoint: mariadbd exited" >&2; exit 1; }
  sleep 0.1
done
# Each step below says when it fails (the log is all a failed test shows of this node).
[ -n "$up" ] || echo "lockbench-entrypoint: mariadbd did not answer on $sock after 600 tries; going on" >&2
mariadb -uroot --socket="$sock" <<SQL || echo "lockbench-entrypoint: creating the users failed" >&2
SET sql_log_bin = 0;
CREATE USER IF NOT EXISTS 'lb'@'%' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON *.* TO 'lb'@'%' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'lbclient'@'%' IDENTIFIED BY '$pw';
CREATE DATABASE IF NOT EXISTS lockbench;
GRANT ALL PRIVILEGES ON lockbench.* TO 'lbclient'@'%';
SQL
if [ -n "$primary" ] && [ ! -f "$datadir/master.info" ]; then
  echo "lockbench-entrypoint: replicating $primary"
  # Tried again on failure: on a Docker engine whose storage driver is fuse-overlayfs, writing
  # master.info failed with EIO ("Error writing file '/data/mysql/master.info' (Errcode: 5)")
  # while other test binaries loaded the machine, and the node stayed read-only, replicating
  # nothing, for good. RESET SLAVE ALL drops what the failed attempt left.
  for try in 1 2 3 4 5 6 7 8 9 10; do
    mariadb -uroot --socket="$sock" <<SQL && break
CHANGE MASTER TO MASTER_HOST='$primary', MASTER_USER='lb', MASTER_PASSWORD='$pw',
  MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
SQL
    echo "lockbench-entrypoint: CHANGE MASTER to $primary failed (try $try of 10)" >&2
    mariadb -uroot --socket="$sock" -e "RESET SLAVE ALL" || true
    sleep 1
  done
fi
if [ -f "$datadir/master.info" ]; then
  mariadb -uroot --socket="$sock" -e "START SLAVE" || echo "lockbench-entrypoint: START SLAVE failed" >&2
fi
echo "lockbench-entrypoint: mariadb serving (primary: ${primary:-this node})"
wait $pid
