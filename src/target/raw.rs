//! The target file's shape as serde reads it: every field optional, unknown fields refused with
//! their line and the valid names; ranges and combinations are checked in `validate`.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub(super) system: Option<String>,
    pub(super) endpoints: Option<Vec<String>>,
    pub(super) prefix: Option<String>,
    pub(super) allow_existing: Option<bool>,
    pub(super) faults: Option<bool>,
    pub(super) sentinel: Option<RawSentinel>,
    pub(super) auth: Option<RawAuth>,
    pub(super) tls: Option<RawTls>,
    pub(super) nodes: Option<Vec<RawNode>>,
    pub(super) commands: Option<RawCommands>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSentinel {
    pub(super) addresses: Option<Vec<String>>,
    pub(super) master: Option<String>,
    pub(super) nat_map: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    pub(super) user: Option<String>,
    pub(super) password: Option<String>,
    pub(super) password_env: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTls {
    pub(super) ca: Option<String>,
    pub(super) cert: Option<String>,
    pub(super) key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNode {
    pub(super) name: Option<String>,
    pub(super) address: Option<String>,
    pub(super) endpoint: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCommands {
    pub(super) kill: Option<String>,
    pub(super) restart: Option<String>,
    pub(super) pause: Option<String>,
    pub(super) resume: Option<String>,
    pub(super) isolate: Option<String>,
    pub(super) heal: Option<String>,
    pub(super) timeout: Option<String>,
}
