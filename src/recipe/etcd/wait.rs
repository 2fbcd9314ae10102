//! Waiting on etcd: watches for deletions that start from "now", and the predecessor wait of
//! `client/v3/concurrency/mutex.go`.

use etcd_client::{
    Client, GetOptions, SortOrder, SortTarget, WatchFilterType, WatchOptions, WatchStream,
};

use std::time::Duration;

use crate::recipe::deadline::Budget;
use crate::recipe::etcd::cleanup::etcd_err;
use crate::recipe::{LockError, Tally};

/// Opens a watch for deletions of `key` from now on and waits until the server confirms
/// it; returns the stream and the revision the watch starts after. Watching from "now"
/// rather than from a past revision matters: etcd 3.4 serves past-revision watchers from
/// a 100 ms catch-up loop, which would cap a lock queue at ~40 grants/s.
pub(super) async fn watch_deletes(
    client: &Client,
    key: &str,
    budget: &Budget,
) -> Result<(WatchStream, i64), LockError> {
    let mut c = client.clone();
    let opts = WatchOptions::new().with_filters([WatchFilterType::NoPut]);
    let mut stream = match budget.run("watch", c.watch(key, Some(opts))).await? {
        Ok(s) => s,
        Err(e) => return Err(etcd_err("watch", e)),
    };
    match budget.run("watch", stream.message()).await? {
        Ok(Some(r)) if r.created() => {
            let rev = r.header().map(|h| h.revision()).unwrap_or(0);
            Ok((stream, rev))
        }
        Ok(_) => Err(LockError::Server(format!(
            "etcd did not create the watch on '{key}'"
        ))),
        Err(e) => Err(etcd_err("watch", e)),
    }
}

/// Waits until no key under `dir` was created before `my_rev` (mutex.go's waitDeletes),
/// then checks that our own key is still there: a lease that expired while we waited
/// would otherwise let us believe we hold the lock (etcd issue 11456). That last read is a
/// round trip the herd does not pay (mutex.go pays it too). A waiter that hears nothing for
/// `fallback_poll` reads the queue again, as a herd waiter does.
pub(super) async fn wait_deletes(
    client: &Client,
    dir: &str,
    mine: &str,
    my_rev: i64,
    budget: &Budget,
    fallback_poll: Duration,
    tally: &Tally,
) -> Result<(), LockError> {
    let mut c = client.clone();
    let mut waited = false;
    loop {
        let opts = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(my_rev - 1)
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1);
        tally.requests(1);
        let resp = match budget.run("get", c.get(dir, Some(opts))).await? {
            Ok(r) => r,
            Err(e) => return Err(etcd_err("queue get", e)),
        };
        let Some(pred) = resp.kvs().first() else {
            break;
        };
        let pred_key = pred.key().to_vec();
        let pred_rev = pred.create_revision();
        let read_at = resp.header().map(|h| h.revision()).unwrap_or(0);
        tally.requests(1);
        let (mut watch, watch_from) =
            watch_deletes(client, &String::from_utf8_lossy(&pred_key), budget).await?;
        if watch_from != read_at {
            // Something changed between the read and the watch: confirm the predecessor
            // (the same incarnation of it) is still there before waiting on it.
            tally.requests(1);
            let still = match budget.run("get", c.get(pred_key.clone(), None)).await? {
                Ok(r) => r.kvs().first().map(|kv| kv.create_revision()) == Some(pred_rev),
                Err(e) => return Err(etcd_err("predecessor get", e)),
            };
            if !still {
                continue;
            }
        }
        waited = true;
        // A broken or cancelled stream (no leader, compaction) ends the wait too: read again.
        tokio::select! {
            m = watch.message() => {
                if let Ok(Some(r)) = m {
                    tally.wakeups(r.events().len() as u64);
                }
            }
            _ = tokio::time::sleep(fallback_poll) => tally.fallback_poll(),
            _ = tokio::time::sleep_until(budget.deadline().into()) => return Err(budget.timeout()),
        }
    }
    if waited {
        tally.requests(1);
        let ours = match budget.run("get", c.get(mine, None)).await? {
            Ok(r) => r.kvs().first().map(|kv| kv.create_revision()) == Some(my_rev),
            Err(e) => return Err(etcd_err("own key get", e)),
        };
        if !ours {
            return Err(LockError::Lost {
                key: mine.to_string(),
                why: "our queue key vanished while waiting (lease expired?)".into(),
            });
        }
    }
    Ok(())
}
