//! The driver protocol, version [`PROTOCOL`]: one JSON object per line, lockbench → driver on
//! the driver's stdin, driver → lockbench on its stdout (stdout carries nothing else; the
//! driver's stderr is saved in the cell's folder).
//!
//! ```text
//! lockbench                                         driver
//!   {"id":0,"op":"hello","protocol":1,"system":…,"library":…,"cluster":{…},
//!    "lease_ttl_ms":…,"clients":…,"settings":{…}}  →
//!   ←  {"id":0,"outcome":"ok","protocol":1,"version":"5.0.8"}
//!   {"id":1,"op":"ping"}  →                          answered at once: the pipe round trip
//!   ←  {"id":1,"outcome":"ok"}
//!   {"id":2,"op":"acquire","client":0,"key":…,"timeout_ms":…}  →
//!   ←  {"id":2,"outcome":"ok","token":…,"requests":…,"wakeups":…}
//!   {"id":3,"op":"read","client":0,"key":…}  →      the register is read when `ok` arrives
//!   ←  {"id":3,"outcome":"ok"}
//!   {"id":4,"op":"write","client":0,"key":…}  →     written when `ok` arrives; `fail` if the
//!   ←  {"id":4,"outcome":"ok"}                       driver saw its lease lost and did not write
//!   {"id":5,"op":"release","client":0,"key":…}  →
//!   ←  {"id":5,"outcome":"ok"}
//!   ←  {"event":"lease_lost","client":0,"key":…,"why":…}   any time, unasked
//! ```
//!
//! Answers carry the id of the request they answer, in any order across clients. An answer
//! is `ok` (it happened), `fail` (it certainly did not) or `info` (unknown), with `error` saying
//! why for the last two. `token`, `requests` and `wakeups` are given only where the library
//! shows them: an absent figure is unknown, never zero. The end of the driver's stdin means
//! lockbench is done: the driver exits.

use serde::{Deserialize, Serialize};

use crate::cluster::ConnectInfo;
use crate::system::System;

/// The protocol's version, sent in `hello` and expected back in its answer.
pub const PROTOCOL: u32 = 1;

/// lockbench → driver: one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Numbers the request; its answer carries the same id.
    pub id: u64,
    /// What is asked.
    #[serde(flatten)]
    pub op: RequestOp,
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RequestOp {
    /// The first request: the protocol version, where the cluster is and how to connect.
    Hello(Box<Hello>),
    /// Answer at once (measures the pipe round trip).
    Ping,
    /// Client `client` takes the lock on `key`, waiting at most `timeout_ms`.
    Acquire {
        client: u32,
        key: String,
        timeout_ms: u64,
    },
    /// Client `client` gives back its lock on `key`.
    Release { client: u32, key: String },
    /// Client `client`, holding `key`, is about to read the protected register.
    Read { client: u32, key: String },
    /// Client `client`, holding `key`, is about to write the protected register.
    Write { client: u32, key: String },
}

/// What `hello` tells the driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL`].
    pub protocol: u32,
    /// The system the cluster runs.
    pub system: System,
    /// The library's name, as its manifest gives it.
    pub library: String,
    /// The addresses clients dial (relays stand in them under client faults), Sentinel's
    /// address map included.
    pub cluster: ConnectInfo,
    /// The workload's lease TTL, ms; the manifest's `lease_ttl` says which library setting
    /// the driver maps it to.
    pub lease_ttl_ms: u64,
    /// How many clients this process serves (numbered from 0).
    pub clients: u32,
    /// Key prefix of the cell: every key the driver is given starts with it.
    pub prefix: String,
    /// The manifest's `[settings]`, passed through.
    #[serde(default)]
    pub settings: toml::Table,
}

/// driver → lockbench: one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reply {
    /// The answer to request `id`.
    Answer(Answer),
    /// Something the driver was not asked about.
    Event(Unasked),
}

/// The outcome of a request, Jepsen's three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It happened.
    Ok,
    /// It certainly did not happen.
    Fail,
    /// Unknown whether it happened.
    Info,
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The request's id.
    pub id: u64,
    /// What became of it.
    pub outcome: Outcome,
    /// Why, for `fail` and `info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The fencing token the library exposes for this grant, if it exposes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// Server requests the acquisition took, where the driver can tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Notifications the waiter received, where the driver can tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups: Option<u64>,
    /// `hello` only: the protocol version the driver speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<u32>,
    /// `hello` only: the library version the driver runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A line the driver sends unasked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Unasked {
    /// The library says client `client`'s lock on `key` is lost (a session or lease ended).
    LeaseLost {
        client: u32,
        key: String,
        #[serde(default)]
        why: Option<String>,
    },
}

/// The line for `request` (no newline).
pub fn line(request: &Request) -> String {
    serde_json::to_string(request).expect("a request always serialises")
}

/// Reads one line from a driver, or says what is wrong with it.
pub fn parse(line: &str) -> Result<Reply, String> {
    serde_json::from_str(line).map_err(|e| format!("not a protocol {PROTOCOL} line ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_flat_objects_and_answers_read_back() {
        let r = Request {
            id: 2,
            op: RequestOp::Acquire {
                client: 0,
                key: "/p/k0".into(),
                timeout_ms: 500,
            },
        };
        assert_eq!(
            line(&r),
            r#"{"id":2,"op":"acquire","client":0,"key":"/p/k0","timeout_ms":500}"#
        );
        let a = parse(r#"{"id":2,"outcome":"ok","token":7}"#).unwrap();
        let Reply::Answer(a) = a else {
            panic!("an answer: {a:?}")
        };
        assert_eq!(
            (a.id, a.outcome, a.token, a.wakeups),
            (2, Outcome::Ok, Some(7), None)
        );
        let lost = parse(r#"{"event":"lease_lost","client":1,"key":"k"}"#).unwrap();
        assert!(matches!(
            lost,
            Reply::Event(Unasked::LeaseLost { client: 1, .. })
        ));
        for bad in ["{}", "ok", r#"{"id":1,"outcome":"maybe"}"#, r#"{"id":1}"#] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
