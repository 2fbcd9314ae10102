#!/bin/bash
# Generates zoo.cfg from the environment and runs one ZooKeeper server in the foreground.
#   ZK_MYID       this server's id (1..N)
#   ZK_SERVERS    "1=host1,2=host2,..." (empty or one entry: standalone)
#   ZK_TICK_MS    tickTime in ms (default 1000); ZK_HEAP: JVM max heap (default 256m)
set -euo pipefail
myid="${ZK_MYID:-1}"
data=/data
[ -f "$data/.lockbench-wipe" ] && rm -rf "${data:?}"/* "$data/.lockbench-wipe"
mkdir -p "$data" /etc/lockbench
echo "$myid" > "$data/myid"
conf=/etc/lockbench/zoo.cfg
cat > "$conf" <<CFG
tickTime=${ZK_TICK_MS:-1000}
initLimit=10
syncLimit=${ZK_SYNC_LIMIT:-2}
dataDir=$data
clientPort=2181
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=false
quorumListenOnAllIPs=true
minSessionTimeout=${ZK_MIN_SESSION_MS:-1000}
maxSessionTimeout=${ZK_MAX_SESSION_MS:-60000}
CFG
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
exec java -Xmx"${ZK_HEAP:-256m}" -XX:+UseSerialGC \
  -Dzookeeper.log.dir=/var/log/zookeeper -Dzookeeper.root.logger=INFO,CONSOLE \
  -cp "/usr/share/java/*:/etc/zookeeper/conf_example" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf"
