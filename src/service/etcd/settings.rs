//! etcd's settings that differ from the package's defaults (etcd's own flags' defaults), as
//! data ([`crate::system::settings`]). Its Raft timings are etcd's defaults (heartbeat 100 ms,
//! election timeout 1 s), named by the entrypoint (`LB_ETCD_HEARTBEAT_MS`,
//! `LB_ETCD_ELECTION_MS`) and not changed. Compiled beside the facts, as `crate::system::etcd`.

use crate::system::settings::{ServerSetting, Source};

/// etcd's table.
pub(super) static SETTINGS: &[ServerSetting] = &[
    ServerSetting {
        node: "server",
        name: "listen-client-urls",
        value: "http://0.0.0.0:2379",
        default: "http://localhost:2379",
        source: Source::Fixed("listen=http://0.0.0.0:2379"),
        reason: "clients reach the member from outside its container",
    },
    ServerSetting {
        node: "server",
        name: "listen-peer-urls",
        value: "http://0.0.0.0:2380",
        default: "http://localhost:2380",
        source: Source::Fixed("--listen-peer-urls http://0.0.0.0:2380"),
        reason: "members reach each other across the cluster's network",
    },
];
