//! What a runner and its `lockbench worker` processes say to each other: one JSON object per
//! line, runner → worker on the worker's stdin, worker → runner on its stdout.
//!
//! ```text
//! runner                                  worker
//!   {"setup":{cluster, recipe, workload, strategy, clients}}  →
//!                                          connects every client
//!   ←  {"ready":{"pid":…}}                 (or {"failed":{"error":…}} and exit)
//!   {"start":{"epoch_ns":…}}  →            the cell's clock zero, raw CLOCK_MONOTONIC
//!   ←  {"event":{…}}  …                    stamped by the worker on that clock
//!   ←  {"arrive":{"client":…,"round":…}}   stampede: a client reached a round's barrier
//!   ←  {"access":{"id":…,"client":…,"key":…,"token":…,"op":"read"|"write","value":…}}
//!                                          a critical section reads or writes the register;
//!                                          the runner applies it to the cell's register,
//!                                          which records the read/write event on its side
//!   {"accessed":{"id":…,"result":{"ok":v}|{"refused":{key,token,highest}}}}  →
//!                                          v: the value read or written; the worker waits
//!                                          at most ACCESS_TIMEOUT (5 s) for it, then takes
//!                                          the access as failed and records nothing itself
//!   {"open":{"round":…}}  →                every client of the cell arrived
//!   "stop"  →                              the cell's acquisitions are reached
//!   ←  "done"                              every client stopped; the worker exits 0
//! ```
//!
//! The end of the worker's stdin means the runner is gone: the worker exits at once, as a
//! killed client would.
//!
//! The protected register lives in the runner, out of reach of the lock service's faults and of
//! a worker's pause, so an access is a request and a reply: a worker paused between its read
//! and its write writes, when resumed, into a register that may have moved on.

use serde::{Deserialize, Serialize};

use crate::cluster::ConnectInfo;
use crate::history::Event;
use crate::recipe::{RecipeConfig, Strategy};
use crate::resource::{AccessOp, Refused};

/// Runner → worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToWorker {
    /// The first line: what to connect and run.
    Setup(Box<Setup>),
    /// The cell starts: its clock's zero as a raw `CLOCK_MONOTONIC` reading, ns.
    Start { epoch_ns: u64 },
    /// Stampede round `round` (from 0) is open: every client of the cell reached it.
    Open { round: u64 },
    /// The cell's acquisitions are reached: start no new acquisition.
    Stop,
    /// The answer to the worker's `access` numbered `id`.
    Accessed { id: u64, result: AccessResult },
}

/// What the register did with an access.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AccessResult {
    /// Accepted: the value read, or the value written.
    Ok(u64),
    /// The fenced register refused a stale token.
    Refused(Refused),
}

impl From<Result<u64, Refused>> for AccessResult {
    fn from(r: Result<u64, Refused>) -> AccessResult {
        match r {
            Ok(v) => AccessResult::Ok(v),
            Err(refused) => AccessResult::Refused(refused),
        }
    }
}

/// What a worker runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Setup {
    /// Where its clients connect.
    pub cluster: ConnectInfo,
    /// How its clients are configured (key prefix, TTL, renewal, timeouts).
    pub recipe: RecipeConfig,
    /// The cell's workload in the workload file's syntax (read back with the same parser).
    pub workload: String,
    /// The waiting strategy.
    pub strategy: Strategy,
    /// The cell's client ids this worker runs (each client's random choices are seeded by its
    /// id, so a client behaves the same in a task or in a worker).
    pub clients: Vec<u32>,
}

/// Worker → runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromWorker {
    /// Every client is connected; waiting for `start`.
    Ready { pid: u32 },
    /// Setting up failed (an unreadable setup, a client that could not connect); the worker
    /// exits.
    Failed { error: String },
    /// A history event, stamped on the cell's clock.
    Event(Box<Event>),
    /// A stampede client reached the barrier of `round`.
    Arrive { client: u32, round: u64 },
    /// Client `client`, holding `key` with fencing token `token`, reads the register of `key`
    /// or writes `value` to it; the runner answers with `accessed` and the same `id` (unique
    /// per worker).
    Access {
        id: u64,
        client: u32,
        key: String,
        token: u64,
        op: AccessOp,
        /// The value to write (absent on a read).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<u64>,
    },
    /// Every client stopped and dropped its connections; the worker exits.
    Done,
}

/// One message as a line (with its newline).
pub(crate) fn line<T: Serialize>(msg: &T) -> std::io::Result<Vec<u8>> {
    let mut out = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    out.push(b'\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{EventKind, Op};
    use crate::system::System;

    #[test]
    fn messages_read_back_equal_one_per_line() {
        let setup = ToWorker::Setup(Box::new(Setup {
            cluster: ConnectInfo {
                system: System::Redis,
                endpoints: vec!["127.0.0.1:1".into()],
                sentinel_endpoints: vec!["127.0.0.1:2".into()],
                address_map: [("redis1".to_string(), "127.0.0.1:1".to_string())].into(),
                master_name: Some("mymaster".into()),
            },
            // A target's login and TLS certificates reach the workers through their stdin
            // (PEM text has newlines: the message is still one line).
            recipe: RecipeConfig {
                credentials: Some(crate::recipe::Credentials {
                    user: Some("bench".into()),
                    password: "pw".into(),
                    tls: Some(crate::recipe::ClientTls {
                        ca_pem: "-----BEGIN CERTIFICATE-----\nCA\n".into(),
                        identity: Some(("C\n".into(), "K\n".into())),
                    }),
                }),
                ..RecipeConfig::default()
            },
            workload: "clients = 2\nduration = \"1s\"\n".into(),
            strategy: Strategy::Herd,
            clients: vec![0, 1],
        }));
        for msg in [
            setup,
            ToWorker::Start { epoch_ns: 42 },
            ToWorker::Open { round: 3 },
            ToWorker::Stop,
            ToWorker::Accessed {
                id: 4,
                result: AccessResult::Ok(3),
            },
            ToWorker::Accessed {
                id: 5,
                result: AccessResult::Refused(Refused {
                    key: "k".into(),
                    token: 1,
                    highest: 2,
                }),
            },
        ] {
            let l = line(&msg).unwrap();
            assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1);
            assert_eq!(serde_json::from_slice::<ToWorker>(&l).unwrap(), msg);
        }
        let mut ev = Event::new(7, 1, EventKind::Ok, Op::Acquire, "k0");
        ev.token = Some(9);
        for msg in [
            FromWorker::Ready { pid: 5 },
            FromWorker::Failed {
                error: "no\nnewline".into(),
            },
            FromWorker::Event(Box::new(ev)),
            FromWorker::Arrive {
                client: 1,
                round: 0,
            },
            FromWorker::Access {
                id: 4,
                client: 1,
                key: "k0".into(),
                token: 9,
                op: AccessOp::Write,
                value: Some(3),
            },
            FromWorker::Done,
        ] {
            let l = line(&msg).unwrap();
            assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1);
            assert_eq!(serde_json::from_slice::<FromWorker>(&l).unwrap(), msg);
        }
        assert_eq!(line(&ToWorker::Stop).unwrap(), b"\"stop\"\n");
        // The shapes the diagram above shows (a stand-in worker script writes them by hand).
        let read = FromWorker::Access {
            id: 1,
            client: 0,
            key: "k".into(),
            token: 2,
            op: AccessOp::Read,
            value: None,
        };
        assert_eq!(
            line(&read).unwrap(),
            br#"{"access":{"id":1,"client":0,"key":"k","token":2,"op":"read"}}
"#
        );
        let reply = ToWorker::Accessed {
            id: 1,
            result: AccessResult::Ok(0),
        };
        assert_eq!(
            line(&reply).unwrap(),
            br#"{"accessed":{"id":1,"result":{"ok":0}}}
"#
        );
    }
}
