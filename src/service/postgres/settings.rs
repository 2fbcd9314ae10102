//! PostgreSQL's settings that differ from the package's defaults (the `postgresql.conf` initdb
//! writes), as data ([`crate::system::settings`]). Compiled beside the facts, as
//! `crate::system::postgres`.

use crate::system::settings::{ServerSetting, Source};

/// PostgreSQL's table.
pub(super) static SETTINGS: &[ServerSetting] = &[
    ServerSetting {
        node: "server",
        name: "listen_addresses",
        value: "'*'",
        default: "'localhost'",
        source: Source::Fixed("listen_addresses = '*'"),
        reason: "clients and replicas reach the server from outside its container",
    },
    ServerSetting {
        node: "server",
        name: "max_connections",
        value: "400",
        default: "100",
        source: Source::Fixed("max_connections = 400"),
        reason: "every client holds a session of its own, and a herd of hundreds is a workload",
    },
    ServerSetting {
        node: "server",
        name: "wal_keep_size",
        value: "256MB",
        default: "0",
        source: Source::Fixed("wal_keep_size = 256MB"),
        reason: "a replica restarted after a kill catches up from the primary's log instead of cloning it again",
    },
    ServerSetting {
        node: "server",
        name: "wal_receiver_status_interval",
        value: "1s",
        default: "10s",
        source: Source::Fixed("wal_receiver_status_interval = 1s"),
        reason: "a replica reports its position to its primary every second, so the primary's view of it is fresh",
    },
    ServerSetting {
        node: "server",
        name: "client_connection_check_interval",
        value: "1s",
        default: "0 (no check)",
        source: Source::Env {
            var: "PG_CONNECTION_CHECK",
            value: "1s",
        },
        reason: "a waiter whose client is gone stops waiting within a second",
    },
    ServerSetting {
        node: "server",
        name: "tcp_keepalives_idle",
        value: "5 s",
        default: "0 (the system's, 7200 s on Linux)",
        source: Source::Env {
            var: "PG_KEEPALIVES_IDLE",
            value: "5",
        },
        reason: "with the two below, a client cut off by a partition is dropped, and its locks freed, within 11 s",
    },
    ServerSetting {
        node: "server",
        name: "tcp_keepalives_interval",
        value: "2 s",
        default: "0 (the system's, 75 s on Linux)",
        source: Source::Env {
            var: "PG_KEEPALIVES_INTERVAL",
            value: "2",
        },
        reason: "see tcp_keepalives_idle",
    },
    ServerSetting {
        node: "server",
        name: "tcp_keepalives_count",
        value: "3",
        default: "0 (the system's, 9 on Linux)",
        source: Source::Env {
            var: "PG_KEEPALIVES_COUNT",
            value: "3",
        },
        reason: "see tcp_keepalives_idle",
    },
];
