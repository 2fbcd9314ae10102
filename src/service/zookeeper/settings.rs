//! ZooKeeper's settings that differ from the package's defaults (the Debian package's
//! `conf_example/zoo.cfg`: `tickTime=2000`, `initLimit=10`, `syncLimit=5`), as data
//! ([`crate::system::settings`]). Compiled beside its facts, as `crate::system::zookeeper`.
//!
//! Why these timings: a follower cut off from the leader keeps answering its clients' pings for
//! up to syncLimit x tickTime before it gives up and drops them, and only then does a holder's
//! client hear anything (it then waits a third of the session timeout T before telling the
//! holder). The leader may expire a session from about 0.85 T - tickTime/2 after the cut (its
//! last relayed touch is up to one client ping interval, 0.15 T, plus half a tick old). Telling
//! the holder first needs syncLimit x tick + T/3 < 0.85 T - tick/2, which
//! T >= 2 x (syncLimit + 1) x tickTime satisfies with about half a tick to spare. The
//! entrypoint clamps a shorter `minSessionTimeout` up to this floor, and the server clamps
//! shorter session requests up to `minSessionTimeout`, so a lease's ttl (the negotiated timeout)
//! always satisfies the rule. With 250 ms ticks the floor is 1.5 s: the 2 s sessions of the
//! long-hold workload and of the tests are safe. The packages' defaults (2 s ticks, syncLimit 5,
//! sessions from 4 s) do not satisfy it: a cut-off holder may be told after its session expired.
//!
//! Why 2 s between election rounds: a server looking for a leader that hears nothing doubles its
//! wait between notification rounds, from 200 ms up to `maxNotificationInterval` (60 s by
//! default). After a long split it sleeps through the heal: a 4-node ensemble cut 2 | 2 for 20 s
//! answered again 5.9 to 6.8 s after the heal in 3 of 4 cells with the default (0.15 s in the
//! fourth, whose wait happened to end just then), 1.1 to 1.8 s in 4 of 4 with 2 s (`lockbench
//! run --systems zookeeper --chaos chaos/split-even-20s.toml --clients 8 --repeat 2 --duration
//! 40s`; the cells' `recovery_cluster_ms`). The cap changes nothing but how soon a looking
//! server asks again.

use crate::system::settings::{ServerSetting, Source};

/// ZooKeeper's table.
pub(super) static SETTINGS: &[ServerSetting] = &[
    ServerSetting {
        node: "server",
        name: "tickTime",
        value: "250 ms",
        default: "2000 ms",
        source: Source::Env {
            var: "ZK_TICK_MS",
            value: "250",
        },
        reason: "session and sync timeouts are whole ticks: short ticks let 2 s sessions satisfy the holder-told-first rule",
    },
    ServerSetting {
        node: "server",
        name: "syncLimit",
        value: "2 ticks (0.5 s)",
        default: "5 ticks",
        source: Source::Env {
            var: "ZK_SYNC_LIMIT",
            value: "2",
        },
        reason: "a follower cut off from its leader drops its clients after syncLimit ticks; the session floor grows with it",
    },
    ServerSetting {
        node: "server",
        name: "initLimit",
        value: "40 ticks (10 s)",
        default: "10 ticks",
        source: Source::Env {
            var: "ZK_INIT_LIMIT",
            value: "40",
        },
        reason: "followers get 10 s to connect and sync with a new leader, as at the default tick",
    },
    ServerSetting {
        node: "server",
        name: "minSessionTimeout",
        value: "1500 ms",
        default: "2 x tickTime",
        source: Source::Env {
            var: "ZK_MIN_SESSION_MS",
            value: "1500",
        },
        reason: "the floor 2 x (syncLimit + 1) x tickTime, at which a cut-off holder is told before the leader can expire its session",
    },
    ServerSetting {
        node: "server",
        name: "maxSessionTimeout",
        value: "60000 ms",
        default: "20 x tickTime",
        source: Source::Env {
            var: "ZK_MAX_SESSION_MS",
            value: "60000",
        },
        reason: "a workload's ttl up to 60 s is granted as asked, whatever the tick",
    },
    ServerSetting {
        node: "server",
        name: "zookeeper.fastleader.maxNotificationInterval",
        value: "2000 ms",
        default: "60000 ms",
        source: Source::Env {
            var: "ZK_MAX_NOTIFICATION_MS",
            value: "2000",
        },
        reason: "after a long split a looking server asks again within 2 s of the heal instead of sleeping through it",
    },
    ServerSetting {
        node: "server",
        name: "maxClientCnxns",
        value: "0 (no limit)",
        default: "60",
        source: Source::Fixed("maxClientCnxns=0"),
        reason: "every client of a run connects from the Docker host's one address",
    },
    ServerSetting {
        node: "server",
        name: "4lw.commands.whitelist",
        value: "*",
        default: "srvr",
        source: Source::Fixed("4lw.commands.whitelist=*"),
        reason: "`conf` answers too, which reads a server's settings back (the default allows `srvr` alone)",
    },
    ServerSetting {
        node: "server",
        name: "admin.enableServer",
        value: "false",
        default: "true",
        source: Source::Fixed("admin.enableServer=false"),
        reason: "nothing reads the admin server; its Jetty would take heap and port 8080 in every container",
    },
    ServerSetting {
        node: "server",
        name: "quorumListenOnAllIPs",
        value: "true",
        default: "false",
        source: Source::Fixed("quorumListenOnAllIPs=true"),
        reason: "a server listens for its peers on every address of its container, whatever its name resolves to",
    },
    ServerSetting {
        node: "server",
        name: "JVM heap (-Xmx)",
        value: "256 MiB",
        default: "a quarter of the machine's memory",
        source: Source::Fixed("-Xmx\"${ZK_HEAP:-256m}\""),
        reason: "several servers and the clients share one machine",
    },
    ServerSetting {
        node: "server",
        name: "JVM collector",
        value: "serial (-XX:+UseSerialGC)",
        default: "G1 (on 2 or more cores and 1792 MiB)",
        source: Source::Fixed("-XX:+UseSerialGC"),
        reason: "a small heap on a machine of few cores: no concurrent collector threads beside the clients",
    },
];
