//! One client of a driver process, as a [`Recipe`]: acquire and release are requests to the
//! driver, and so are the register's read and write ([`Recipe::before_access`]), which the
//! runner applies when the driver's `ok` arrives.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::process::{DriverProcess, NoAnswer};
use super::protocol::{Answer, Outcome, RequestOp};
use crate::recipe::{Claim, Lease, LockError, LostSignal, Recipe, Strategy, Tally};
use crate::resource::AccessOp;
use crate::system::System;

/// How long past what it asks a request may take before its outcome is taken as unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Added to an acquisition's own timeout.
    pub answer_grace: Duration,
    /// For a release, a read or a write: long, since a paused driver answers late and its
    /// write must then land late, as a paused application's would.
    pub access: Duration,
}

/// Client number `client` of a driver process.
pub struct DriverClient {
    process: Arc<DriverProcess>,
    client: u32,
    system: System,
    ttl: Duration,
    tokens: bool,
    deadlines: Deadlines,
    /// The cell's key prefix: the driver is sent `<prefix>/<key>`, so cells never share a key.
    prefix: String,
}

impl DriverClient {
    /// Client `client` of `process`, locking on `system` with leases of `ttl`; `tokens` says
    /// whether the library gives fencing tokens. Keys go to the driver under `prefix` (none
    /// when empty).
    pub fn new(
        process: Arc<DriverProcess>,
        client: u32,
        system: System,
        ttl: Duration,
        tokens: bool,
        deadlines: Deadlines,
        prefix: &str,
    ) -> DriverClient {
        DriverClient {
            process,
            client,
            system,
            ttl,
            tokens,
            deadlines,
            prefix: prefix.to_string(),
        }
    }

    /// `key` as the driver is sent it.
    fn wire(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }
}

/// An answer's error, or what its outcome says when it gives none.
fn why(a: &Answer) -> String {
    a.error
        .clone()
        .unwrap_or_else(|| format!("the driver answered {:?}", a.outcome))
}

fn unknown(e: NoAnswer) -> LockError {
    LockError::Connection(e.0)
}

impl Recipe for DriverClient {
    fn system(&self) -> System {
        self.system
    }

    fn strategies(&self) -> &'static [Strategy] {
        self.system.strategies()
    }

    async fn acquire_claim(
        &self,
        key: &str,
        _strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        crate::recipe::exclusive_only(self.system, claim)?;
        let started = Instant::now();
        if let Some(why) = self.process.broken() {
            // A broken driver answers nothing: its clients wait out their deadline (no flood of
            // instant failures) and end unknown.
            tokio::time::sleep_until(deadline.into()).await;
            return Err(LockError::Connection(why));
        }
        let (trigger, lost) = LostSignal::new();
        let wire = self.wire(key);
        self.process.watch_lost(self.client, &wire, trigger);
        let op = RequestOp::Acquire {
            client: self.client,
            key: wire.clone(),
            timeout_ms: deadline.saturating_duration_since(started).as_millis() as u64,
        };
        let answered = self
            .process
            .request(op, deadline + self.deadlines.answer_grace)
            .await;
        let a = match answered {
            Ok(a) => a,
            Err(e) => {
                self.process.unwatch_lost(self.client, &wire);
                tally.hide_wakeups();
                tally.hide_requests();
                return Err(unknown(e));
            }
        };
        match a.requests {
            Some(n) => tally.requests(n),
            None => tally.hide_requests(),
        }
        match a.wakeups {
            Some(n) => tally.wakeups(n),
            None => tally.hide_wakeups(),
        }
        if a.outcome == Outcome::Ok {
            self.process.granted_one();
        }
        match a.outcome {
            Outcome::Ok => Ok(Lease {
                key: key.to_string(),
                token: a.token.unwrap_or(0),
                acquired_at: Instant::now(),
                ttl: self.ttl,
                ttl_spent: Duration::ZERO,
                wakeups: tally.wakeup_count(),
                requests: tally.request_count(),
                fallback_polls: 0,
                queue_position: None,
                lost,
                handle: Box::new(()),
            }),
            Outcome::Fail => {
                self.process.unwatch_lost(self.client, &wire);
                Err(LockError::Timeout {
                    key: key.to_string(),
                    waited: started.elapsed(),
                })
            }
            Outcome::Info => {
                self.process.unwatch_lost(self.client, &wire);
                Err(LockError::Connection(why(&a)))
            }
        }
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let wire = self.wire(&lease.key);
        let op = RequestOp::Release {
            client: self.client,
            key: wire.clone(),
        };
        let answered = self
            .process
            .request(op, Instant::now() + self.deadlines.access)
            .await;
        self.process.unwatch_lost(self.client, &wire);
        let a = answered.map_err(unknown)?;
        match a.outcome {
            Outcome::Ok => Ok(()),
            Outcome::Fail => Err(LockError::Lost {
                key: lease.key,
                why: why(&a),
            }),
            Outcome::Info => Err(LockError::Connection(why(&a))),
        }
    }

    fn has_tokens(&self) -> bool {
        self.tokens
    }

    async fn before_access(&self, lease: &Lease, op: AccessOp) -> Result<(), LockError> {
        let (client, key) = (self.client, self.wire(&lease.key));
        let op = match op {
            AccessOp::Write => RequestOp::Write { client, key },
            AccessOp::Read | AccessOp::SharedRead => RequestOp::Read { client, key },
        };
        let sent = Instant::now();
        let a = self
            .process
            .request(op, sent + self.deadlines.access)
            .await
            .map_err(unknown)?;
        self.process.round_trip(sent.elapsed());
        match a.outcome {
            Outcome::Ok => Ok(()),
            Outcome::Fail => Err(LockError::Lost {
                key: lease.key.clone(),
                why: why(&a),
            }),
            Outcome::Info => Err(LockError::Connection(why(&a))),
        }
    }

    async fn crash(self) {}
}
