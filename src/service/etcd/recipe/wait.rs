//! Waiting on etcd: watches for deletions that start from "now", and the predecessor wait of
//! `client/v3/concurrency/mutex.go`.

use etcd_client::{
    Client, GetOptions, GetResponse, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
    WatchFilterType, WatchOptions, WatchStream,
};

use std::time::Duration;

use crate::recipe::claim::turn;
use crate::recipe::deadline::Budget;
use crate::recipe::{Claim, LockError, Tally, Turn};
use crate::service::etcd::recipe::cleanup::etcd_err;

/// Opens a watch for deletions of `key` from now on and waits until the server confirms
/// it; returns the stream and the revision the watch starts after. Watching from "now"
/// rather than from a past revision matters: etcd 3.4 serves past-revision watchers from
/// a 100 ms catch-up loop, which would cap a lock queue at ~40 grants/s.
pub(super) async fn watch_deletes(
    client: &Client,
    key: &str,
    budget: &Budget,
) -> Result<(WatchStream, i64), LockError> {
    watch_changes(client, key, false, false, budget).await
}

/// Waits until no key under `dir` was created before `my_rev` (mutex.go's waitDeletes),
/// checking, after any wait, that our own key is still there: a lease that expired while we
/// waited would otherwise let us believe we hold the lock (etcd issue 11456). mutex.go reads
/// the queue and then our key, two linearizable reads after every wake-up (each a round of
/// the leader's heartbeats, forwarded when the client's member follows); here they are one
/// transaction of two reads at one revision, so a handoff pays one (the floor's chain) and the
/// check is, if anything, stronger. A waiter that hears nothing for `fallback_poll` reads the
/// queue again, as a herd waiter does.
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
    // The wake-ups the last wait counted: if the queue still has a key ahead of ours after
    // them, the key we watched left without the lock passing to us (a withdrawn or expired
    // waiter): the queue correcting itself, not a release ([`Tally::queue_wakeups`]).
    let mut woken = 0;
    loop {
        let opts = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(my_rev - 1)
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1);
        tally.requests(1);
        let resp = if waited {
            ahead_and_ours(&mut c, dir, opts, mine, my_rev, budget).await?
        } else {
            match budget.run("get", c.get(dir, Some(opts))).await? {
                Ok(r) => r,
                Err(e) => return Err(etcd_err("queue get", e)),
            }
        };
        let Some(pred) = resp.kvs().first() else {
            return Ok(());
        };
        tally.queue_wakeups(std::mem::take(&mut woken));
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
        woken = sleep_on(&mut watch, fallback_poll, budget, tally).await?;
    }
}

/// One transaction of two reads at one revision: the queue ahead of us under `dir`
/// (`ahead`'s options), and our key `mine`, which must still be the incarnation created at
/// `my_rev`; the queue's answer, or [`LockError::Lost`] when our key is gone.
async fn ahead_and_ours(
    c: &mut Client,
    dir: &str,
    ahead: GetOptions,
    mine: &str,
    my_rev: i64,
    budget: &Budget,
) -> Result<GetResponse, LockError> {
    let txn = Txn::new().and_then([TxnOp::get(dir, Some(ahead)), TxnOp::get(mine, None)]);
    let resp = match budget.run("txn", c.txn(txn)).await? {
        Ok(r) => r,
        Err(e) => return Err(etcd_err("queue and own key txn", e)),
    };
    let mut gets = resp.op_responses().into_iter().map(|r| match r {
        TxnOpResponse::Get(g) => Some(g),
        _ => None,
    });
    let (Some(Some(queue)), Some(Some(own))) = (gets.next(), gets.next()) else {
        return Err(LockError::Server(
            "etcd answered the queue and own key reads with something else".into(),
        ));
    };
    if own.kvs().first().map(|kv| kv.create_revision()) != Some(my_rev) {
        return Err(LockError::Lost {
            key: mine.to_string(),
            why: "our queue key vanished while waiting (lease expired?)".into(),
        });
    }
    Ok(queue)
}

/// How a queued acquisition of a kind that shares the lock waits: what it claims, and whether
/// it is the herd (every waiter watches the whole queue for deletions) or a predecessor waiter
/// (watching one key, see [`crate::recipe::claim`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Wait {
    pub claim: Claim,
    pub herd: bool,
}

/// The claim word an etcd queue key ends with (`<lease hex>-<word>`); `lock` when it has none
/// (an exclusive lock's key, the concurrency mutex's).
pub(super) fn claim_word(key: &[u8]) -> &str {
    let name = std::str::from_utf8(key).unwrap_or_default();
    let last = name.rsplit('/').next().unwrap_or(name);
    last.split_once('-')
        .map_or(Claim::Exclusive.word(), |(_, w)| w)
}

/// Waits until [`turn`] grants our key `mine` (create revision `my_rev`) in the queue under
/// `dir`, reading the queue ahead of us on every wake-up. The herd and a semaphore's first
/// waiter watch the whole queue for deletions; any other waiter watches the one key ahead
/// that [`turn`] names, for its deletion, and for a permit also for its grant mark (the key
/// written again, which moves its mod revision past its create revision). Ends, as
/// [`wait_deletes`] does, by checking our key is still there.
#[allow(clippy::too_many_arguments)]
pub(super) async fn wait_claim(
    client: &Client,
    dir: &str,
    mine: &str,
    my_rev: i64,
    wait: Wait,
    budget: &Budget,
    fallback_poll: Duration,
    tally: &Tally,
) -> Result<(), LockError> {
    let mut c = client.clone();
    let mut waited = false;
    let is_permit = matches!(wait.claim, Claim::Permit { .. });
    // The create revision of a permit ahead known to hold already.
    let mut granted_ahead: Option<i64> = None;
    // The wake-ups of the last wait on one key ahead: still behind after them, that key left
    // without the lock passing to us, as in [`wait_deletes`] (a queue correction). Not for a
    // permit, whose watch also hears the grant mark of the one ahead.
    let mut woken = 0;
    loop {
        let opts = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(my_rev)
            .with_sort(SortTarget::Create, SortOrder::Ascend);
        tally.requests(1);
        let resp = match budget.run("get", c.get(dir, Some(opts))).await? {
            Ok(r) => r,
            Err(e) => return Err(etcd_err("queue get", e)),
        };
        let read_at = resp.header().map(|h| h.revision()).unwrap_or(0);
        let queue = resp.kvs();
        let Some(pos) = queue.iter().position(|kv| kv.create_revision() == my_rev) else {
            return Err(LockError::Lost {
                key: mine.to_string(),
                why: "our queue key vanished while waiting (lease expired?)".into(),
            });
        };
        let blocks_readers = |i: usize| Claim::word_blocks_readers(claim_word(queue[i].key()));
        let turn = turn(wait.claim, pos, blocks_readers);
        if !matches!(turn, Turn::Granted) {
            tally.queue_wakeups(woken);
        }
        woken = 0;
        let ahead = match turn {
            Turn::Granted => break,
            Turn::Behind(i) if !wait.herd && Some(queue[i].create_revision()) != granted_ahead => {
                let kv = &queue[i];
                if is_permit && kv.mod_revision() != kv.create_revision() {
                    granted_ahead = Some(kv.create_revision());
                    continue;
                }
                Some((kv.key().to_vec(), kv.create_revision()))
            }
            Turn::Behind(_) | Turn::FirstWaiter => None,
        };
        // Watch either the one key ahead or (herd, first waiter) the whole queue.
        let (target, puts) = match &ahead {
            Some((key, _)) => (String::from_utf8_lossy(key).into_owned(), is_permit),
            None => (dir.to_string(), false),
        };
        tally.requests(1);
        let (mut watch, watch_from) =
            watch_changes(client, &target, ahead.is_none(), puts, budget).await?;
        if watch_from != read_at {
            // Something changed between the read and the watch: read again rather than wait
            // for a change that already happened.
            continue;
        }
        waited = true;
        let n = sleep_on(&mut watch, fallback_poll, budget, tally).await?;
        if ahead.is_some() && !is_permit {
            woken = n;
        }
    }
    if waited {
        confirm_ours(&mut c, mine, my_rev, budget, tally).await?;
    }
    Ok(())
}

/// [`watch_deletes`] over a key or (`prefix`) a whole queue, with its puts too when `puts`.
async fn watch_changes(
    client: &Client,
    key: &str,
    prefix: bool,
    puts: bool,
    budget: &Budget,
) -> Result<(WatchStream, i64), LockError> {
    let mut c = client.clone();
    let mut opts = WatchOptions::new();
    if !puts {
        opts = opts.with_filters([WatchFilterType::NoPut]);
    }
    if prefix {
        opts = opts.with_prefix();
    }
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

/// After a wait: checks our key `mine` is still there, the same incarnation (`my_rev`). A lease
/// that expired while we waited would otherwise let us believe we hold the lock (etcd issue
/// 11456).
async fn confirm_ours(
    c: &mut Client,
    mine: &str,
    my_rev: i64,
    budget: &Budget,
    tally: &Tally,
) -> Result<(), LockError> {
    tally.requests(1);
    let ours = match budget.run("get", c.get(mine, None)).await? {
        Ok(r) => r.kvs().first().map(|kv| kv.create_revision()) == Some(my_rev),
        Err(e) => return Err(etcd_err("own key get", e)),
    };
    if ours {
        Ok(())
    } else {
        Err(LockError::Lost {
            key: mine.to_string(),
            why: "our queue key vanished while waiting (lease expired?)".into(),
        })
    }
}

/// Waits for a message on `watch` (counting its events as wake-ups), for the fallback poll
/// interval, or for the deadline: the wake-ups it counted. A broken or cancelled stream (no
/// leader, compaction) ends the wait too: the caller reads again.
async fn sleep_on(
    watch: &mut WatchStream,
    fallback_poll: Duration,
    budget: &Budget,
    tally: &Tally,
) -> Result<u64, LockError> {
    tokio::select! {
        m = watch.message() => {
            if let Ok(Some(r)) = m {
                let n = r.events().len() as u64;
                tally.wakeups(n);
                return Ok(n);
            }
        }
        _ = tokio::time::sleep(fallback_poll) => tally.fallback_poll(),
        _ = tokio::time::sleep_until(budget.deadline().into()) => return Err(budget.timeout()),
    }
    Ok(0)
}
