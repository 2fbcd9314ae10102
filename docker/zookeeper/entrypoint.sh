#!/bin/bash
# Generates zoo.cfg from the environment and runs one ZooKeeper server in the foreground.
#   ZK_MYID       this server's id (1..N)
#   ZK_SERVERS    "1=host1,2=host2,..." (empty or one entry: standalone)
#   ZK_TICK_MS    tickTime in ms (default 250); ZK_SYNC_LIMIT: syncLimit in ticks (default 2)
#   ZK_MIN_SESSION_MS  minSessionTimeout (default and floor: 2 x (syncLimit + 1) ticks)
#   ZK_HEAP       JVM max heap (default 256m)
#   ZK_MAX_NOTIFICATION_MS  fast leader election's longest wait between notification rounds
#                 (default 2000; ZooKeeper's own default is 60000)
#
# Why 2 s between election rounds: a server looking for a leader that hears nothing doubles its
# wait between notification rounds, from 200 ms up to zookeeper.fastleader.maxNotificationInterval
# (60 s by default). After a long split it sleeps through the heal: a 4-node ensemble cut 2 | 2
# for 20 s answered again 5.9 to 6.8 s after the heal in 3 of 4 cells with the default (0.15 s
# in the fourth, whose wait happened to end just then), 1.1 to 1.8 s in 4 of 4 with 2 s
# (lockbench run --systems zookeeper --chaos chaos/split-even-20s.toml --clients 8 --repeat 2
# --duration 40s; the cells' recovery_cluster_ms). The cap changes nothing but how soon a
# looking server asks again; to measure ZooKeeper's default, run an image built FROM this one
# with ENV ZK_MAX_NOTIFICATION_MS=60000 through LOCKBENCH_ZOOKEEPER_IMAGE.
#
# Why these numbers: a follower cut off from the leader keeps answering its clients' pings for
# up to syncLimit x tickTime before it gives up and drops them, and only then does a holder's
# client hear anything (it then waits a third of the session timeout T before telling the
# holder). The leader may expire a session from about 0.85 T - tickTime/2 after the cut (its
# last relayed touch is up to one client ping interval, 0.15 T, plus half a tick old). Telling
# the holder first needs syncLimit x tick + T/3 < 0.85 T - tick/2, which
# T >= 2 x (syncLimit + 1) x tickTime satisfies with about half a tick to spare. The server
# clamps shorter session requests up to this floor, so a lease's ttl (the negotiated timeout)
# always satisfies the rule. With 250 ms ticks the floor is 1.5 s: the 2 s sessions of the
# long-hold workload and of the tests are safe (at the old 1 s tick they needed 6 s).
set -euo pipefail
myid="${ZK_MYID:-1}"
data=/data
[ -f "$data/.lockbench-wipe" ] && rm -rf "${data:?}"/* "$data/.lockbench-wipe"
mkdir -p "$data" /etc/lockbench
echo "$myid" > "$data/myid"
conf=/etc/lockbench/zoo.cfg
tick="${ZK_TICK_MS:-250}"
sync="${ZK_SYNC_LIMIT:-2}"
floor=$(( 2 * (sync + 1) * tick ))
min_session="${ZK_MIN_SESSION_MS:-$floor}"
if [ "$min_session" -lt "$floor" ]; then
  echo "lockbench-entrypoint: ZK_MIN_SESSION_MS=$min_session is below 2 x (syncLimit + 1) x tickTime = $floor ms: a holder could be told after the leader expired its session; using $floor" >&2
  min_session="$floor"
fi
cat > "$conf" <<CFG
tickTime=$tick
# Followers get 10 s to connect and sync with a new leader, whatever the tick.
initLimit=$(( (10000 + tick - 1) / tick ))
syncLimit=$sync
dataDir=$data
clientPort=2181
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=false
quorumListenOnAllIPs=true
minSessionTimeout=$min_session
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
# The classpath names what the server needs: zookeeper.jar (its manifest's Class-Path lists the
# libraries it links against), one SLF4J binding, log4j 1.2's, and the package's example
# log4j.properties, whose CONSOLE appender writes to stdout. Not /usr/share/java/*: that holds
# every SLF4J binding and bridge Debian installs beside ZooKeeper, SLF4J binds whichever it
# finds first (java.util.logging, to stderr, on bookworm), and it aborts the start when that is
# slf4j-jcl.jar beside jcl-over-slf4j.jar (on trixie).
jars=/usr/share/java
exec java -Xmx"${ZK_HEAP:-256m}" -XX:+UseSerialGC \
  -Dzookeeper.fastleader.maxNotificationInterval="${ZK_MAX_NOTIFICATION_MS:-2000}" \
  -Dzookeeper.log.dir=/var/log/zookeeper -Dzookeeper.root.logger=INFO,CONSOLE \
  -cp "/etc/zookeeper/conf_example:$jars/zookeeper.jar:$jars/slf4j-log4j12.jar:$jars/log4j-1.2.jar" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf"
