//! The etcd lease behind one lock client (etcd's "session"), and the keep-alive task that renews
//! it at TTL/3 and tells every holder when it is gone.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, LeaseKeepAliveStream, LeaseKeeper};

use crate::recipe::deadline::drift;
use crate::recipe::holders::Holders;
use crate::recipe::{LockError, RecipeConfig};
use crate::service::etcd::recipe::cleanup::etcd_err;
use crate::sync::LockUnpoisoned;

/// One granted lease and its keep-alive task; dropping it stops the keep-alive.
pub(crate) struct EtcdSession {
    /// The lease id; lock keys carry it.
    pub(crate) id: i64,
    /// The TTL the server granted (it raises TTLs below its minimum).
    pub(crate) ttl: Duration,
    /// Held leases to tell when the lease is gone.
    pub(crate) holders: Arc<Holders>,
    /// When the last renewal the server acknowledged was sent (the grant request at first).
    renewed_at: Arc<Mutex<Instant>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EtcdSession {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EtcdSession {
    /// Grants a lease of `config.ttl` (rounded up to whole seconds) and, with `config.renew`,
    /// starts keeping it alive.
    pub(crate) async fn grant(
        client: &Client,
        config: &RecipeConfig,
    ) -> Result<EtcdSession, LockError> {
        let ttl_secs = config.ttl.as_secs_f64().ceil().max(1.0) as i64;
        let mut c = client.clone();
        let sent = Instant::now();
        let granted =
            match tokio::time::timeout(config.request_timeout, c.lease_grant(ttl_secs, None)).await
            {
                Ok(Ok(g)) => g,
                // "no leader" during an election is a connection problem: try again.
                Ok(Err(e)) => return Err(etcd_err("lease grant", e)),
                Err(_) => {
                    return Err(LockError::Connection(format!(
                        "lease grant got no answer within {:?}: check that the etcd cluster has \
                         a leader, or raise request_timeout",
                        config.request_timeout
                    )));
                }
            };
        let ttl = Duration::from_secs(granted.ttl().max(1) as u64);
        // Holders are lost by the clock from the grant request's send + TTL − drift on, and
        // each acknowledged renewal moves that later.
        let holders = Arc::new(Holders::valid_until(sent + ttl.saturating_sub(drift(ttl))));
        let renewed_at = Arc::new(Mutex::new(sent));
        let task = tokio::spawn(keep_alive(
            client.clone(),
            granted.id(),
            ttl,
            config.request_timeout,
            config.renew,
            holders.clone(),
            renewed_at.clone(),
        ));
        Ok(EtcdSession {
            id: granted.id(),
            ttl,
            holders,
            renewed_at,
            task,
        })
    }

    /// When the last renewal the server acknowledged was sent: the server keeps the lease at
    /// least until this + TTL, and holders are told `drift(ttl)` before that.
    pub(crate) fn renewed_at(&self) -> Instant {
        *self.renewed_at.locked()
    }

    /// True once the lease is known to be gone.
    pub(crate) fn is_dead(&self) -> bool {
        self.holders.dead().is_some()
    }
}

/// The wait before the first renewal retried after one that got no answer; it doubles with
/// each failure in a row, up to the regular `ttl / 3`.
const RETRY_FIRST: Duration = Duration::from_millis(100);

/// Renews lease `id` every `ttl / 3` (sooner again after a renewal that got no answer). The server counts the TTL from when a renewal reaches it,
/// which is after we sent it, so the lease is certainly alive until `last sent + ttl`: if no
/// renewal succeeds by then less the drift allowance (or the server says the lease is gone),
/// every holder is told.
async fn keep_alive(
    mut client: Client,
    id: i64,
    ttl: Duration,
    request_timeout: Duration,
    renew: bool,
    holders: Arc<Holders>,
    renewed_at: Arc<Mutex<Instant>>,
) {
    let valid = ttl.saturating_sub(drift(ttl));
    let mut alive_since = *renewed_at.locked();
    if !renew {
        tokio::time::sleep_until((alive_since + valid).into()).await;
        holders.lose_all("lease TTL ran out (renew is off)");
        return;
    }
    let mut stream: Option<(LeaseKeeper, LeaseKeepAliveStream)> = None;
    // After a renewal that got no answer, the next one goes sooner than the regular TTL/3 (as
    // etcd's own client retries its keep-alive stream after about half a second): a client
    // whose connection went to a killed member would otherwise spend a whole TTL on two or
    // three tries and tell its holders the lock was lost while the lease is still alive.
    // The wait after the last renewal when it got no answer; `None` after one that did.
    let mut retry_after: Option<Duration> = None;
    loop {
        // Never wait past the moment the lease may be gone, so the holder hears it in time.
        let give_up = alive_since + valid;
        let wait = retry_after.map_or(ttl / 3, |d| d.min(ttl / 3));
        tokio::time::sleep_until((Instant::now() + wait).min(give_up).into()).await;
        let sent = Instant::now();
        let limit = (sent + request_timeout).min(give_up).into();
        let renewed = match stream.as_mut() {
            // Opening the stream sends one renewal and checks the answer.
            None => match tokio::time::timeout_at(limit, client.lease_keep_alive(id)).await {
                Ok(Ok(s)) => {
                    stream = Some(s);
                    Ok(true)
                }
                Ok(Err(etcd_client::Error::LeaseKeepAliveError(e))) if e.contains("not found") => {
                    Err(e)
                }
                _ => Ok(false),
            },
            Some((keeper, responses)) => {
                let round = async {
                    keeper.keep_alive().await?;
                    responses.message().await
                };
                match tokio::time::timeout_at(limit, round).await {
                    Ok(Ok(Some(r))) if r.ttl() > 0 => Ok(true),
                    Ok(Ok(Some(_))) => Err("the lease expired or was revoked".to_string()),
                    _ => {
                        stream = None; // reopen next round
                        Ok(false)
                    }
                }
            }
        };
        match renewed {
            Ok(true) => {
                alive_since = sent;
                *renewed_at.locked() = sent;
                holders.renewed_until(sent + valid);
                retry_after = None;
            }
            Ok(false) => {
                retry_after = Some(retry_after.map_or(RETRY_FIRST, |d| (d * 2).min(ttl / 3)));
            }
            Err(why) => {
                holders.lose_all(&format!("etcd lease {id:x}: {why}"));
                return;
            }
        }
        if Instant::now() >= alive_since + valid {
            holders.lose_all(&format!(
                "etcd lease {id:x} was not renewed for a whole TTL ({ttl:?})"
            ));
            return;
        }
    }
}
