//! MariaDB's settings that differ from the package's defaults (the server's own, with the
//! Debian package's `50-server.cnf`), as data ([`crate::system::settings`]). Every one is fixed:
//! replication, durability and room for the clients, which the faults and the recipes need.
//! Compiled beside the facts, as `crate::system::mariadb`.

use crate::system::settings::{ServerSetting, Source};

/// MariaDB's table.
pub(super) static SETTINGS: &[ServerSetting] = &[
    ServerSetting {
        node: "server",
        name: "bind-address",
        value: "0.0.0.0",
        default: "127.0.0.1",
        source: Source::Fixed("--bind-address=0.0.0.0"),
        reason: "clients and replicas reach the server from outside its container",
    },
    ServerSetting {
        node: "server",
        name: "skip-name-resolve",
        value: "on",
        default: "off",
        source: Source::Fixed("--skip-name-resolve"),
        reason: "a connection is not held up by a reverse lookup of its client",
    },
    ServerSetting {
        node: "server",
        name: "log-bin, log-slave-updates",
        value: "on",
        default: "off",
        source: Source::Fixed("--log-bin=mariadb-bin --relay-log=relay-bin --log-slave-updates"),
        reason: "replicas replicate, and a promoted replica's log holds everything an old primary needs to follow it",
    },
    ServerSetting {
        node: "server",
        name: "gtid-strict-mode",
        value: "1",
        default: "0",
        source: Source::Fixed("--gtid-strict-mode=1"),
        reason: "a replica refuses a log that forked from its own instead of applying it",
    },
    ServerSetting {
        node: "server",
        name: "binlog-format",
        value: "ROW",
        default: "MIXED",
        source: Source::Fixed("--binlog-format=ROW"),
        reason: "a fencing sequence's values replicate as written",
    },
    ServerSetting {
        node: "server",
        name: "sync-binlog",
        value: "1",
        default: "0",
        source: Source::Fixed("--sync-binlog=1"),
        reason: "a killed primary has lost no fencing token it handed out",
    },
    ServerSetting {
        node: "server",
        name: "max-connections",
        value: "2000",
        default: "151",
        source: Source::Fixed("--max-connections=2000"),
        reason: "every client holds a session of its own, and a herd of hundreds is a workload",
    },
    ServerSetting {
        node: "server",
        name: "innodb-buffer-pool-size",
        value: "64 MiB",
        default: "128 MiB",
        source: Source::Fixed("--innodb-buffer-pool-size=64M"),
        reason: "several servers and the clients share one machine; the lock tables are tiny",
    },
    ServerSetting {
        node: "server",
        name: "skip-slave-start",
        value: "on",
        default: "off",
        source: Source::Fixed("--skip-slave-start"),
        reason: "the entrypoint decides at each start whom a node replicates, before it starts replicating",
    },
];
