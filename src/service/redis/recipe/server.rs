//! One Redis server as the lock recipes see it: a self-reconnecting command connection, one
//! pub/sub connection whose messages are routed to the waiters that asked for them (in
//! `redis_pubsub`), and the script calls with their deadlines.

use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{
    ErrorKind, IntoConnectionInfo, RedisError, RedisWrite, Script, ServerErrorKind, ToRedisArgs,
};
use tokio::sync::mpsc::UnboundedSender;

use crate::recipe::{Credentials, LockError};
use crate::service::redis::recipe::pubsub::PubSub;
use crate::service::redis::recipe::scripts::{
    FAIR_ACQUIRE_SCRIPT, HERD_ACQUIRE_SCRIPT, HERD_RELEASE_SCRIPT, Keys, QueueEntry,
    RELEASE_SCRIPT, RENEW_SCRIPT, RESOLVE_SCRIPT, SHARED_RENEW_SCRIPT, TicketMode,
};

/// One Redis server.
pub(crate) struct Server {
    endpoint: String,
    conn: ConnectionManager,
    request_timeout: Duration,
    pubsub: Arc<PubSub>,
}

/// What one take attempt answered.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    /// Fencing token, > 0 when granted.
    pub token: u64,
    /// Queue ticket (queue takes only).
    pub ticket: Option<u64>,
    /// How long to wait at most before trying again: `None` = until notified (a queue take:
    /// others are ahead of this waiter), else the holder's remaining TTL (after which the lock
    /// is free without a release).
    pub retry_within: Option<Duration>,
    /// The owner value that holds the lock on this server when a herd take was refused;
    /// `None` for a grant and for the other takes.
    pub holder: Option<String>,
}

impl Attempt {
    /// A queue take's answer from its script: the token (0 unless granted), the ticket, and
    /// the retry hint in ms (negative: wait to be notified).
    pub(crate) fn queued(token: u64, ticket: u64, hint: i64) -> Attempt {
        Attempt {
            token,
            ticket: Some(ticket),
            retry_within: (hint >= 0).then(|| Duration::from_millis(hint as u64)),
            holder: None,
        }
    }
}

/// How one queue take goes, beyond the lock and its owner.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FairTake<'a> {
    /// How long the queue entry lives without a refresh ([`entry_ttl`]).
    ///
    /// [`entry_ttl`]: crate::service::redis::recipe::common::entry_ttl
    pub entry_ttl: Duration,
    /// Which ticket the take proposes or settles on.
    pub mode: TicketMode,
    /// The message for a waiter this take may make first (see [`wake_message`]).
    ///
    /// [`wake_message`]: crate::service::redis::recipe::common::wake_message
    pub wake: &'a str,
}

/// One script argument as the request carries it: text, or a number in decimal. Written
/// straight into the request (no `String` per argument on the lock's path).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    Number(u64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(s: &'a str) -> Arg<'a> {
        Arg::Text(s)
    }
}

impl From<u64> for Arg<'_> {
    fn from(n: u64) -> Self {
        Arg::Number(n)
    }
}

impl ToRedisArgs for Arg<'_> {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        match self {
            Arg::Text(s) => s.write_redis_args(out),
            Arg::Number(n) => n.write_redis_args(out),
        }
    }
}

/// Maps a client error to the contract's error, naming the server.
pub(crate) fn lock_error(endpoint: &str, e: RedisError) -> LockError {
    // Refused before anything ran: no connection, a demoted master (READONLY: the caller must
    // find the new one), a server still loading its data set, a replica cut from its master.
    if e.is_connection_refusal() || matches!(e.code(), Some("READONLY" | "LOADING" | "MASTERDOWN"))
    {
        LockError::Unavailable(format!("{endpoint}: {e}"))
    } else if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
        LockError::Connection(format!("{endpoint}: {e}"))
    } else {
        LockError::Server(format!("{endpoint}: {e}"))
    }
}

pub(super) fn ms(d: Duration) -> u64 {
    d.as_millis().max(1) as u64
}

impl Server {
    /// A node whose connections open lazily and reconnect by themselves, so a server that is
    /// down now (a Redlock master) can serve later calls once it is back.
    /// Logs in with `credentials` when given (`AUTH [user] password` on every connection), over
    /// TLS when they carry certificates.
    pub fn new(
        endpoint: &str,
        request_timeout: Duration,
        credentials: Option<&Credentials>,
    ) -> Result<Server, LockError> {
        let invalid = |e: RedisError| {
            LockError::Server(format!(
                "'{endpoint}' is not a valid Redis address (use host:port): {e}"
            ))
        };
        let tls = credentials.and_then(|c| c.tls.as_ref());
        let scheme = if tls.is_some() { "rediss" } else { "redis" };
        let mut info = format!("{scheme}://{endpoint}/")
            .into_connection_info()
            .map_err(invalid)?;
        if let Some(c) = credentials.filter(|c| c.logs_in()) {
            let mut login = info.redis_settings().clone().set_password(&c.password);
            if let Some(user) = &c.user {
                login = login.set_username(user);
            }
            info = info.set_redis_settings(login);
        }
        let client = match tls {
            None => ::redis::Client::open(info),
            Some(t) => ::redis::Client::build_with_tls(
                info,
                ::redis::TlsCertificates {
                    client_tls: t
                        .identity
                        .as_ref()
                        .map(|(cert, key)| ::redis::ClientTlsConfig {
                            client_cert: cert.as_bytes().to_vec(),
                            client_key: key.as_bytes().to_vec(),
                        }),
                    root_cert: Some(t.ca_pem.as_bytes().to_vec()),
                },
            ),
        }
        .map_err(invalid)?;
        let cfg = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(request_timeout))
            .set_response_timeout(Some(request_timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(200));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), cfg)
            .map_err(|e| lock_error(endpoint, e))?;
        Ok(Server {
            endpoint: endpoint.to_string(),
            pubsub: PubSub::new(endpoint, client, request_timeout),
            conn,
            request_timeout,
        })
    }

    /// `127.0.0.1:port` of this server.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Runs `cmd` with a deadline of `limit` (capped by the request timeout).
    pub async fn query<T: ::redis::FromRedisValue>(
        &self,
        cmd: &::redis::Cmd,
        limit: Duration,
    ) -> Result<T, LockError> {
        let mut conn = self.conn.clone();
        let limit = limit.min(self.request_timeout);
        match tokio::time::timeout(limit, cmd.query_async::<T>(&mut conn)).await {
            Ok(r) => r.map_err(|e| lock_error(&self.endpoint, e)),
            Err(_) => Err(self.timed_out(limit)),
        }
    }

    /// Runs `pipe` (several commands in one round trip, not atomic) with a deadline of `limit`
    /// (capped by the request timeout).
    pub async fn query_pipe<T: ::redis::FromRedisValue>(
        &self,
        pipe: &::redis::Pipeline,
        limit: Duration,
    ) -> Result<T, LockError> {
        let mut conn = self.conn.clone();
        let limit = limit.min(self.request_timeout);
        match tokio::time::timeout(limit, pipe.query_async::<T>(&mut conn)).await {
            Ok(r) => r.map_err(|e| lock_error(&self.endpoint, e)),
            Err(_) => Err(self.timed_out(limit)),
        }
    }

    fn timed_out(&self, limit: Duration) -> LockError {
        LockError::Connection(format!(
            "{} did not answer within {limit:?} (raise request_timeout if the server is just slow)",
            self.endpoint
        ))
    }

    /// Runs `script` by its hash (`EVALSHA`, loading it first if the server does not know it)
    /// with `keys` and `args`, written straight into the one request buffer, with a deadline of
    /// `limit` (capped by the request timeout) for the whole call.
    pub(super) async fn eval<T: ::redis::FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[Arg<'_>],
        limit: Duration,
    ) -> Result<T, LockError> {
        // Sized up front: the name, the hash, the key count, the keys and the arguments (a
        // number at most 20 digits), so building the request reallocates nothing.
        let args_len: usize = args
            .iter()
            .map(|a| match a {
                Arg::Text(s) => s.len(),
                Arg::Number(_) => 20,
            })
            .sum();
        let keys_len: usize = keys.iter().map(|k| k.len()).sum();
        let mut cmd = ::redis::Cmd::with_capacity(
            3 + keys.len() + args.len(),
            "EVALSHA".len() + script.get_hash().len() + 2 + keys_len + args_len,
        );
        cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys.len());
        for k in keys {
            cmd.arg(*k);
        }
        for a in args {
            cmd.arg(a);
        }
        let mut conn = self.conn.clone();
        let limit = limit.min(self.request_timeout);
        let call = async {
            match cmd.query_async::<T>(&mut conn).await {
                Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                    script.load_async(&mut conn).await?;
                    cmd.query_async::<T>(&mut conn).await
                }
                r => r,
            }
        };
        match tokio::time::timeout(limit, call).await {
            Ok(r) => r.map_err(|e| lock_error(&self.endpoint, e)),
            Err(_) => Err(self.timed_out(limit)),
        }
    }

    /// One herd take (`SET NX PX` plus the fencing `INCR`).
    pub async fn herd_acquire(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        limit: Duration,
    ) -> Result<Attempt, LockError> {
        let (token, pttl, holder): (u64, i64, String) = self
            .eval(
                &HERD_ACQUIRE_SCRIPT,
                &[keys.lock(), keys.fence()],
                &[owner.into(), ms(ttl).into()],
                limit,
            )
            .await?;
        Ok(Attempt {
            token,
            ticket: None,
            // -2: the key vanished meanwhile, try again at once; -1: a key without TTL (not
            // ours), only a release or the fallback poll can help.
            retry_within: match pttl {
                -1 => None,
                p => Some(Duration::from_millis(p.max(0) as u64)),
            },
            holder: (token == 0).then_some(holder),
        })
    }

    /// One queue take (enqueue or refresh, then take if at the head and free), as `take`
    /// says.
    pub async fn fair_acquire(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        take: &FairTake<'_>,
        limit: Duration,
    ) -> Result<Attempt, LockError> {
        let FairTake {
            entry_ttl,
            mode,
            wake,
        } = *take;
        let (mode, ticket) = mode.args();
        let (token, ticket, hint): (u64, u64, i64) = self
            .eval(
                &FAIR_ACQUIRE_SCRIPT,
                &[
                    keys.lock(),
                    keys.fence(),
                    keys.queue(),
                    keys.expiry(),
                    keys.tickets(),
                    keys.tentative(),
                ],
                &[
                    owner.into(),
                    ms(ttl).into(),
                    ms(entry_ttl).into(),
                    mode.into(),
                    ticket.into(),
                    wake.into(),
                ],
                limit,
            )
            .await?;
        Ok(Attempt::queued(token, ticket, hint))
    }

    /// Compare-and-delete plus queue exit; true if this call deleted `owner`'s lock. `wake` is
    /// the message for the waiters this may let in (see [`wake_message`]); `None` is silent.
    ///
    /// [`wake_message`]: crate::service::redis::recipe::common::wake_message
    pub async fn release(
        &self,
        keys: &Keys,
        owner: &str,
        token: u64,
        wake: Option<&str>,
        entry: QueueEntry,
        limit: Duration,
    ) -> Result<bool, LockError> {
        let wake = wake.unwrap_or_default();
        let deleted: i64 = match entry {
            // A herd holder never queued: its own script, without the queue's work.
            QueueEntry::Never => {
                self.eval(
                    &HERD_RELEASE_SCRIPT,
                    &[keys.lock(), keys.fence()],
                    &[owner.into(), token.into(), wake.into()],
                    limit,
                )
                .await?
            }
            QueueEntry::Keep | QueueEntry::Leave => {
                self.eval(
                    &RELEASE_SCRIPT,
                    &[
                        keys.lock(),
                        keys.fence(),
                        keys.queue(),
                        keys.expiry(),
                        keys.tentative(),
                    ],
                    &[owner.into(), token.into(), wake.into(), entry.word().into()],
                    limit,
                )
                .await?
            }
        };
        Ok(deleted == 1)
    }

    /// After a take whose answer was lost: the fencing token if `owner` holds the lock (now
    /// renewed for `ttl`), else 0 once `owner`'s queue entry is gone (see `RESOLVE` in
    /// `scripts.rs`). `wake` is the message for a queue head the entry may have blocked.
    pub async fn resolve(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        wake: &str,
        limit: Duration,
    ) -> Result<u64, LockError> {
        self.eval(
            &RESOLVE_SCRIPT,
            &[
                keys.lock(),
                keys.fence(),
                keys.queue(),
                keys.expiry(),
                keys.tentative(),
            ],
            &[owner.into(), ms(ttl).into(), wake.into()],
            limit,
        )
        .await
    }

    /// Extends `owner`'s lock, or with `shared` its read, write or permit claim (see
    /// `shared.rs`); false if it is no longer `owner`'s.
    pub async fn renew(
        &self,
        keys: &Keys,
        owner: &str,
        ttl: Duration,
        shared: bool,
        limit: Duration,
    ) -> Result<bool, LockError> {
        let (script, k): (&Script, Vec<&str>) = match shared {
            true => (&SHARED_RENEW_SCRIPT, keys.shared().to_vec()),
            false => (&RENEW_SCRIPT, vec![keys.lock(), keys.expiry()]),
        };
        let ok: i64 = self
            .eval(script, &k, &[owner.into(), ms(ttl).into()], limit)
            .await?;
        Ok(ok == 1)
    }

    /// Routes messages on `channel` to `tx` (tagged `id`) until [`Server::unsubscribe`], over
    /// the node's one pub/sub connection (see `redis_pubsub`).
    pub async fn subscribe(
        &self,
        channel: &str,
        id: u64,
        tx: UnboundedSender<Vec<u8>>,
        limit: Duration,
    ) -> Result<(), LockError> {
        self.pubsub.subscribe(channel, id, tx, limit).await
    }

    /// Stops routing `channel` to waiter `id`; unsubscribes when nobody else listens.
    pub async fn unsubscribe(&self, channel: &str, id: u64) {
        self.pubsub.unsubscribe(channel, id).await
    }

    /// Drops the pub/sub connection (the command connection goes with the last `Arc`).
    pub async fn shutdown(&self) {
        self.pubsub.shutdown().await
    }
}
