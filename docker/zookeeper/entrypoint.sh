#!/bin/bash
# Generates zoo.cfg from the environment and runs one ZooKeeper server in the foreground.
#   ZK_MYID       this server's id (1..N)
#   ZK_SERVERS    "1=host1,2=host2,..." (empty or one entry: standalone)
#   ZK_HEAP       JVM max heap (default 256m)
# The timings below default to the package's (its conf_example/zoo.cfg, and ZooKeeper's own
# where that says nothing); lockbench passes its own values from
# src/service/zookeeper/settings.rs, which says why each differs, unless a run asks for
# --server-defaults.
#   ZK_TICK_MS    tickTime in ms (default 2000); ZK_SYNC_LIMIT, ZK_INIT_LIMIT: syncLimit and
#                 initLimit in ticks (default 5 and 10)
#   ZK_MIN_SESSION_MS, ZK_MAX_SESSION_MS  minSessionTimeout and maxSessionTimeout in ms
#                 (default: not written, so 2 and 20 ticks); a minimum below
#                 2 x (syncLimit + 1) ticks is raised to it
#   ZK_MAX_NOTIFICATION_MS  fast leader election's longest wait between notification rounds
#                 (default: not given, so 60000)
set -euo pipefail
myid="${ZK_MYID:-1}"
data=/data
[ -f "$data/.lockbench-wipe" ] && rm -rf "${data:?}"/* "$data/.lockbench-wipe"
mkdir -p "$data" /etc/lockbench
echo "$myid" > "$data/myid"
conf=/etc/lockbench/zoo.cfg
tick="${ZK_TICK_MS:-2000}"
sync="${ZK_SYNC_LIMIT:-5}"
floor=$(( 2 * (sync + 1) * tick ))
min_session="${ZK_MIN_SESSION_MS:-}"
if [ -n "$min_session" ] && [ "$min_session" -lt "$floor" ]; then
  echo "lockbench-entrypoint: ZK_MIN_SESSION_MS=$min_session is below 2 x (syncLimit + 1) x tickTime = $floor ms: a holder could be told after the leader expired its session; using $floor" >&2
  min_session="$floor"
fi
max_session="${ZK_MAX_SESSION_MS:-}"
cat > "$conf" <<CFG
tickTime=$tick
initLimit=${ZK_INIT_LIMIT:-10}
syncLimit=$sync
dataDir=$data
clientPort=2181
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=false
quorumListenOnAllIPs=true
CFG
[ -z "$min_session" ] || echo "minSessionTimeout=$min_session" >> "$conf"
[ -z "$max_session" ] || echo "maxSessionTimeout=$max_session" >> "$conf"
peers=()
IFS=',' read -ra entries <<< "${ZK_SERVERS:-}"
if [ "${#entries[@]}" -gt 1 ]; then
  for e in "${entries[@]}"; do
    id="${e%%=*}"; host="${e#*=}"
    echo "server.$id=$host:2888:3888;2181" >> "$conf"
    peers+=("$host")
  done
fi
echo "lockbench-entrypoint: starting zookeeper myid=$myid"
# Peers start one after another: wait (bounded) until each name resolves, as ZooKeeper
# resolves the server list once at start-up.
for host in "${peers[@]}"; do
  for _ in $(seq 1 120); do getent hosts "$host" >/dev/null && break; sleep 0.5; done
done
# The classpath names what the server needs: zookeeper.jar (its manifest's Class-Path lists the
# libraries it links against), one SLF4J binding, log4j 1.2's, and the package's example
# log4j.properties, whose CONSOLE appender writes to stdout. Not /usr/share/java/*: that holds
# every SLF4J binding and bridge Debian installs beside ZooKeeper, SLF4J binds whichever it
# finds first (java.util.logging, to stderr, on bookworm), and it aborts the start when that is
# slf4j-jcl.jar beside jcl-over-slf4j.jar (on trixie).
jars=/usr/share/java
props=()
[ -z "${ZK_MAX_NOTIFICATION_MS:-}" ] || props+=(-Dzookeeper.fastleader.maxNotificationInterval="$ZK_MAX_NOTIFICATION_MS")
exec java -Xmx"${ZK_HEAP:-256m}" -XX:+UseSerialGC "${props[@]}" \
  -Dzookeeper.log.dir=/var/log/zookeeper -Dzookeeper.root.logger=INFO,CONSOLE \
  -cp "/etc/zookeeper/conf_example:$jars/zookeeper.jar:$jars/slf4j-log4j12.jar:$jars/log4j-1.2.jar" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf"
