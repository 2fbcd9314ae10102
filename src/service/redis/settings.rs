//! Redis's and Sentinel's settings that differ from the package's defaults (the servers' own,
//! as they start without a configuration file), as data ([`crate::system::settings`]). Redlock
//! runs the same data servers with no Sentinel: its table is the first part of this one
//! ([`SERVER`]). Compiled beside the facts, as `crate::system::redis`.
//!
//! `lockbench up redis --persistence` starts the data servers with an append-only file fsynced
//! on every write (`appendonly yes`, `appendfsync always`, against `no` and `everysec`); a run
//! never does.

use crate::system::settings::{ServerSetting, Source};

/// How many of [`SETTINGS`] the data servers take (the rest are Sentinel's).
const SERVER_SETTINGS: usize = 2;

/// The data servers' settings, Redlock's whole table.
pub(crate) static SERVER: &[ServerSetting] = SETTINGS.split_at(SERVER_SETTINGS).0;

/// Redis with Sentinel's table: the data servers', then Sentinel's.
pub(super) static SETTINGS: &[ServerSetting] = &[
    ServerSetting {
        node: "server",
        name: "save",
        value: "\"\" (no snapshots)",
        default: "3600 1 300 100 60 10000",
        source: Source::Fixed("--save \"\""),
        reason: "a restarted server has forgotten every key, as the Redlock spec assumes and the kill faults say",
    },
    ServerSetting {
        node: "server",
        name: "protected-mode",
        value: "no",
        default: "yes",
        source: Source::Fixed("--protected-mode no"),
        reason: "clients reach the server from outside its container, with no password",
    },
    ServerSetting {
        node: "sentinel",
        name: "down-after-milliseconds",
        value: "1000 ms",
        default: "30000 ms",
        source: Source::Env {
            var: "SENTINEL_DOWN_MS",
            value: "1000",
        },
        reason: "a failover starts a second after the master stops answering, so a cell of seconds sees it",
    },
    ServerSetting {
        node: "sentinel",
        name: "failover-timeout",
        value: "5000 ms",
        default: "180000 ms",
        source: Source::Env {
            var: "SENTINEL_FAILOVER_MS",
            value: "5000",
        },
        reason: "a failover that stalls is tried again after 5 s instead of 3 minutes",
    },
    ServerSetting {
        node: "sentinel",
        name: "protected-mode",
        value: "no",
        default: "yes",
        source: Source::Fixed("protected-mode no"),
        reason: "clients and the other Sentinels reach it from outside its container, with no password",
    },
    ServerSetting {
        node: "sentinel",
        name: "resolve-hostnames, announce-hostnames",
        value: "yes",
        default: "no",
        source: Source::Fixed("sentinel announce-hostnames yes"),
        reason: "nodes are known by host name, so a restarted container (a new address) is the same node",
    },
];
