//! ZooKeeper locks, after the ZooKeeper "Locks" recipe and Curator's `LockInternals`.
//!
//! - **herd**: everyone creates the same ephemeral node `<prefix>/<key>/lock`; losers watch
//!   that node and all retry on every release.
//! - **predecessor**: everyone creates an ephemeral sequential
//!   `<prefix>/<key>/<session id hex>-lock-NNNNNNNNNN`; the lowest sequence number holds, each
//!   other waiter watches only the node just below its own. The session id in the name (like
//!   Curator's protected mode) lets a client find nodes of its own that a lost answer left
//!   behind, which would otherwise make it wait for itself.
//!
//! Every lock node carries the id of the attempt that made it (a random u64, in hex) as its
//! data. A clean-up reads data and version and deletes that version only if the data is the
//! one it means: a take-back removes its own attempt's node, a leftover sweep removes nodes of
//! earlier attempts but never one of a lock this client holds, as a client may hold one key
//! while acquiring another.
//!
//! The two strategies use different node names, so they do not exclude each other: use one
//! strategy per key, and one acquisition per key at a time per client. Fencing token: the lock
//! node's czxid. One recipe value has one session at a time; sessions are detached, so
//! [`Recipe::crash`] leaves it to expire on the server as a dead process's would.
//!
//! **The session-timeout rule.** A holder is told its lock may be gone when its session ends,
//! or when its connection stays down for a third of the session timeout T. A follower cut off
//! from the leader keeps answering pings for up to `syncLimit × tickTime` before it drops its
//! clients, while the leader may expire the session about 0.85 T − tickTime/2 after the cut.
//! So the holder is told first only if `T ≥ 2 × (syncLimit + 1) × tickTime`; the suite's image
//! (250 ms ticks, syncLimit 2) sets `minSessionTimeout` to that floor (1.5 s), so the server
//! raises any shorter request and a lease's `ttl` (the negotiated timeout) always obeys it.
//! Against another ensemble, choose T by the same rule (with the defaults of 2 s ticks and
//! syncLimit 5: T ≥ 24 s).

mod cleanup;
mod session;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::recipe::claim::turn;
use crate::recipe::deadline::Budget;
use crate::recipe::holders::Holders;
use crate::recipe::janitor::Janitor;
use crate::recipe::retry::Unanswered;
use crate::recipe::{
    Claim, Lease, LockError, Recipe, RecipeConfig, Strategy, Tally, Turn, check_strategy,
};
use crate::service::zookeeper::recipe::cleanup::{ZkChore, ZkJanitorCtx};
use crate::service::zookeeper::recipe::session::{
    Mine, SEQ_PREFIX, ZkSession, attempt_data, attempt_of, delete_own, idempotent, is_live,
    maybe_applied, open_session, sequence, session_tag, sweep_own, zk_err,
};
use crate::sync::LockUnpoisoned;
use crate::system::System;

/// The herd's lock node in a key's directory.
const HERD_NODE: &str = "lock";

/// A ZooKeeper lock client: one session at a time (a new one replaces an expired one at the
/// next acquire), both strategies.
pub struct ZookeeperRecipe {
    connect_string: String,
    config: RecipeConfig,
    session: tokio::sync::Mutex<Arc<ZkSession>>,
    /// Lock directories known to exist, so each key pays for creating its parents once.
    parents: Mutex<HashSet<String>>,
    /// Removes, until the ensemble confirms it, our nodes that a release or a failed acquire
    /// could not remove and everything a session we gave up on left (see `cleanup`).
    janitor: Janitor<ZkChore>,
    /// Attempt ids of the locks this client holds now: a clean-up never removes their nodes.
    live: Mutex<HashSet<u64>>,
}

/// The lock node that grants a lock, as a [`Lease`] is made from it.
struct HeldNode {
    path: String,
    /// Its czxid: the fencing token.
    czxid: i64,
    /// Its place in the queue (its sequence number); `None` for the herd's one node.
    queue: Option<u64>,
}

impl HeldNode {
    fn herd(path: String, czxid: i64) -> HeldNode {
        HeldNode {
            path,
            czxid,
            queue: None,
        }
    }
}

/// A node read from the server: its path and its data (the attempt id it carries).
struct Found<'a> {
    path: &'a str,
    data: &'a [u8],
}

/// One acquisition, across the tries its retryable errors cost.
struct Attempt {
    /// The id every node of the attempt carries as its data, the same on every try, so that a
    /// later try finds a node an earlier one made unanswered, and a withdrawal exactly them.
    id: u64,
    /// Sessions under which a create of this attempt went unanswered (it may have landed).
    unanswered: Unanswered,
    /// The queue node it made (predecessor) and its session, to take back if it fails.
    queued: Mutex<Option<(String, i64)>>,
}

/// What `release` needs: the node, the attempt id its data carries (which proves it is still
/// the node we created), and the session that created it.
struct Handle {
    path: String,
    attempt: u64,
    session_id: i64,
    holders: Arc<Holders>,
    holder: u64,
}

impl ZookeeperRecipe {
    /// Opens one session on the ensemble `endpoints` (`host:port` each) with session timeout
    /// `config.ttl`, giving up after three request timeouts.
    pub async fn connect(endpoints: &[String], config: RecipeConfig) -> Result<Self, LockError> {
        let connect_string = endpoints.join(",");
        let session = open_session(&connect_string, &config).await?;
        let ctx = ZkJanitorCtx::new(connect_string.clone(), config.clone());
        let janitor = Janitor::new(ctx, config.retry);
        Ok(ZookeeperRecipe {
            connect_string,
            config,
            session: tokio::sync::Mutex::new(Arc::new(session)),
            parents: Mutex::new(HashSet::new()),
            janitor,
            live: Mutex::new(HashSet::new()),
        })
    }

    /// The current session, e.g. for a test or a fault that expires it from another connection.
    pub async fn session_info(&self) -> zk::SessionInfo {
        self.session.lock().await.client.session().clone()
    }

    /// The session timeout the server granted (it clamps to 2..20 ticks).
    pub async fn session_timeout(&self) -> Duration {
        self.session.lock().await.client.session_timeout()
    }

    /// The live session, opening a new one if the last one ended (an expired ZooKeeper
    /// session never comes back).
    async fn live_session(&self, tally: &Tally) -> Result<Arc<ZkSession>, LockError> {
        let mut slot = self.session.lock().await;
        if slot.holders.dead().is_none() {
            return Ok(slot.clone());
        }
        // The ended session's nodes may outlive it on the server (a quorum that comes back
        // renews every session it knows): remove them as soon as the ensemble answers.
        let old = slot.client.session_id().0;
        for dir in self.parents.locked().iter() {
            self.janitor.hand(ZkChore::Dir {
                dir: dir.clone(),
                owner: old,
                which: Mine::Any,
            });
        }
        tally.requests(1);
        let fresh = Arc::new(open_session(&self.connect_string, &self.config).await?);
        *slot = fresh.clone();
        Ok(fresh)
    }

    /// Removes the node of `attempt` after a failed acquisition; hands it to the janitor if
    /// the server did not answer.
    async fn take_back(&self, s: &ZkSession, key: &str, path: &str, attempt: u64) {
        let budget = Budget::cleanup(key, self.config.request_timeout, 2);
        if delete_own(s, path, Mine::Attempt(attempt), &self.live, &budget)
            .await
            .is_err()
        {
            self.node_chore(path, s.client.session_id().0, attempt);
        }
    }

    /// Hands the removal of `path` (a node of `attempt` under session `owner`) to the janitor.
    fn node_chore(&self, path: &str, owner: i64, attempt: u64) {
        self.janitor.hand(ZkChore::Node {
            path: path.to_string(),
            owner,
            which: Mine::Attempt(attempt),
        });
    }

    /// After an acquisition that failed with a create whose outcome is unknown: removes every
    /// node of `attempt` under the sessions the create went out under (the herd node if it
    /// carries the attempt id; queue nodes found by tag and id), asking until `until`, whether
    /// or not those sessions still live here. Once the ensemble confirms it, the outcome is
    /// known: [`LockError::Withdrawn`]. Otherwise the original, unknown error stays, and the
    /// janitor goes on trying.
    async fn withdraw(
        &self,
        key: &str,
        attempt: &Attempt,
        err: LockError,
        until: Instant,
        tally: &Tally,
    ) -> LockError {
        let dir = self.dir(key);
        for owner in attempt.unanswered.ids() {
            let chore = ZkChore::Dir {
                dir: dir.clone(),
                owner,
                which: Mine::Attempt(attempt.id),
            };
            if !self.janitor.confirm(chore, until, tally).await {
                return err;
            }
        }
        LockError::Withdrawn {
            key: key.to_string(),
            why: format!("{err}; the ensemble confirmed no node of this attempt is left"),
        }
    }

    fn dir(&self, key: &str) -> String {
        format!("{}/{}", self.config.prefix.trim_end_matches('/'), key)
    }

    /// Creates the persistent directories down to `dir` once per key.
    async fn ensure_dir(
        &self,
        s: &ZkSession,
        dir: &str,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<(), LockError> {
        if self.known_parent(dir) {
            return Ok(());
        }
        let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        let mut prefix = String::new();
        for part in dir.split('/').filter(|p| !p.is_empty()) {
            prefix.push('/');
            prefix.push_str(part);
            tally.requests(1);
            match idempotent(budget, "create parent", || {
                s.client.create(&prefix, b"", &opts)
            })
            .await?
            {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(zk_err(&prefix, e)),
            }
        }
        self.parents.locked().insert(dir.to_string());
        Ok(())
    }

    fn known_parent(&self, dir: &str) -> bool {
        self.parents.locked().contains(dir)
    }

    fn lease(
        &self,
        s: &ZkSession,
        key: &str,
        node: HeldNode,
        attempt: u64,
        tally: &Tally,
    ) -> Lease {
        let HeldNode { path, czxid, queue } = node;
        self.live.locked().insert(attempt);
        let (holder, lost) = s.holders.register();
        Lease {
            key: key.to_string(),
            token: czxid as u64,
            acquired_at: Instant::now(),
            ttl: s.client.session_timeout(),
            ttl_spent: Duration::ZERO,
            wakeups: tally.wakeup_count(),
            requests: tally.request_count(),
            fallback_polls: tally.fallback_poll_count(),
            queue_position: queue,
            lost,
            handle: Box::new(Handle {
                path,
                attempt,
                session_id: s.client.session_id().0,
                holders: s.holders.clone(),
                holder,
            }),
        }
    }

    /// One try of the herd for `att` (its node, made by an earlier try unanswered, is found
    /// by the attempt id and taken as the grant).
    async fn acquire_herd(
        &self,
        key: &str,
        att: &Attempt,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        let attempt = att.id;
        let dir = self.dir(key);
        let s = &*self.live_session(tally).await?;
        self.ensure_dir(s, &dir, budget, tally).await?;
        let path = format!("{dir}/{HERD_NODE}");
        let opts = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        let data = attempt_data(attempt);
        loop {
            // The attempt id makes this create safe to repeat after a lost connection: a node
            // that carries it is ours, found below.
            tally.requests(1);
            let created = idempotent(budget, "create", || s.client.create(&path, &data, &opts))
                .await
                .and_then(|r| match r {
                    Ok(created) => Ok(Some(created)),
                    Err(zk::Error::NodeExists) => Ok(None),
                    Err(e) => Err(zk_err(&path, e)),
                });
            if created.is_ok() {
                self.janitor.cluster_answered();
            }
            match created {
                Ok(Some((stat, _))) => {
                    let node = HeldNode::herd(path, stat.czxid);
                    return Ok(self.lease(s, key, node, attempt, tally));
                }
                Ok(None) => {}
                Err(e) => {
                    if e.is_indeterminate() {
                        att.unanswered.note(s.client.session_id().0, &e);
                    } else if maybe_applied(&e) {
                        // The deadline cut the create short, yet it may have landed: take back
                        // a lock we may hold.
                        self.take_back(s, key, &path, attempt).await;
                    }
                    return Err(e);
                }
            }
            // Every waiter watches the one lock node and hears every release: the herd. Its
            // data and owner also show a node our own session left behind, which we would
            // otherwise wait for until the deadline.
            tally.requests(1);
            let (data, stat, watcher) =
                match idempotent(budget, "getData", || s.client.get_and_watch_data(&path)).await? {
                    Ok(r) => r,
                    Err(zk::Error::NoNode) => continue, // released between our create and our read
                    Err(e) => return Err(zk_err(&path, e)),
                };
            if stat.ephemeral_owner == s.client.session_id().0 && attempt_of(&data) == Some(attempt)
            {
                // Our create landed although its answer was lost.
                let node = HeldNode::herd(path, stat.czxid);
                return Ok(self.lease(s, key, node, attempt, tally));
            }
            if stat.ephemeral_owner == s.client.session_id().0 {
                let found = Found {
                    path: &path,
                    data: &data,
                };
                self.remove_leftover(s, key, found, attempt, budget, tally)
                    .await?;
                continue;
            }
            let poll = self.config.fallback_poll;
            tokio::select! {
                _ = watcher.changed() => tally.wakeups(1),
                _ = tokio::time::sleep(poll) => tally.fallback_poll(),
                _ = tokio::time::sleep_until(budget.deadline().into()) => return Err(budget.timeout()),
            }
        }
    }

    /// One try of the predecessor queue for `att`. A node this attempt made under the
    /// current session in an earlier try (answered or not) is found by the session's tag and
    /// the attempt id, and keeps its place; the node is noted in the attempt, to be taken back
    /// if the acquisition fails in the end.
    async fn acquire_predecessor(
        &self,
        key: &str,
        att: &Attempt,
        wait: Wait,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        let attempt = att.id;
        let dir = self.dir(key);
        let s = &*self.live_session(tally).await?;
        let owner = s.client.session_id().0;
        self.ensure_dir(s, &dir, budget, tally).await?;
        let tag = session_tag(s);
        let base = format!("{dir}/{tag}{}{SEQ_PREFIX}", claim_infix(wait.claim));
        let tried_here = att
            .queued
            .locked()
            .as_ref()
            .is_some_and(|(_, o)| *o == owner)
            || att.unanswered.ids().contains(&owner);
        let found = if tried_here {
            self.find_own(s, &dir, attempt, budget, tally).await?
        } else {
            None
        };
        let (path, czxid, me) = match found {
            Some(f) => f,
            None => {
                let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
                tally.requests(1);
                let created = budget
                    .run(
                        "create",
                        s.client.create(&base, &attempt_data(attempt), &opts),
                    )
                    .await
                    .and_then(|r| r.map_err(|e| zk_err(&base, e)));
                if created.is_ok() {
                    self.janitor.cluster_answered();
                }
                match created {
                    Ok((stat, seq)) => (format!("{base}{seq}"), stat.czxid, seq.into_i64()),
                    Err(e) => {
                        if e.is_indeterminate() {
                            // The node may exist under a name we never learnt: the next try
                            // looks for it by our tag and this attempt's id.
                            att.unanswered.note(owner, &e);
                        } else if maybe_applied(&e) {
                            let cleanup = Budget::cleanup(key, self.config.request_timeout, 3);
                            let mine = Mine::Attempt(attempt);
                            let _ = sweep_own(s, &dir, mine, &self.live, &cleanup).await;
                        }
                        return Err(e);
                    }
                }
            }
        };
        *att.queued.locked() = Some((path.clone(), owner));
        self.wait_turn(s, &dir, me, attempt, wait, budget, tally)
            .await?;
        if matches!(wait.claim, Claim::Permit { .. }) {
            // A permit's grant is a change the waiter behind may be watching for (see
            // `claim`): it marks it by writing its node's data again.
            tally.requests(1);
            match idempotent(budget, "setData", || {
                s.client.set_data(&path, &attempt_data(attempt), None)
            })
            .await?
            {
                Ok(_) => {}
                Err(zk::Error::NoNode) => {
                    return Err(LockError::Lost {
                        key: key.to_string(),
                        why: "our queue node vanished at the grant (session expired?)".into(),
                    });
                }
                Err(e) => return Err(zk_err(&path, e)),
            }
        }
        let node = HeldNode {
            path,
            czxid,
            queue: Some(me as u64),
        };
        Ok(self.lease(s, key, node, attempt, tally))
    }

    /// This session's queue node of `attempt` in `dir`, if there is one: its path, czxid and
    /// sequence number.
    async fn find_own(
        &self,
        s: &ZkSession,
        dir: &str,
        attempt: u64,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<Option<(String, i64, i64)>, LockError> {
        tally.requests(1);
        let children =
            match idempotent(budget, "getChildren", || s.client.list_children(dir)).await? {
                Ok(c) => c,
                Err(e) => return Err(zk_err(dir, e)),
            };
        let tag = session_tag(s);
        for c in children.iter().filter(|c| c.starts_with(&tag)) {
            let Some(seq) = sequence(c) else { continue };
            let path = format!("{dir}/{c}");
            tally.requests(1);
            match idempotent(budget, "getData", || s.client.get_data(&path)).await? {
                Ok((data, stat)) if attempt_of(&data) == Some(attempt) => {
                    return Ok(Some((path, stat.czxid, seq)));
                }
                Ok(_) | Err(zk::Error::NoNode) => {}
                Err(e) => return Err(zk_err(&path, e)),
            }
        }
        Ok(None)
    }

    /// A herd node of our own session that is not this attempt's: a leftover of an earlier
    /// attempt (removed, guarded by its data and version), or a lock this client holds (an
    /// error: acquiring it again would wait for ourselves).
    async fn remove_leftover(
        &self,
        s: &ZkSession,
        key: &str,
        found: Found<'_>,
        attempt: u64,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<(), LockError> {
        if attempt_of(found.data).is_some_and(|a| is_live(&self.live, a)) {
            return Err(already_held(key));
        }
        tally.requests(2);
        delete_own(
            s,
            found.path,
            Mine::Leftover { current: attempt },
            &self.live,
            budget,
        )
        .await?;
        Ok(())
    }

    /// Waits until our sequence number `me` is the lowest in `dir`, watching only the node just
    /// below ours and reading the queue again on every wake-up: the predecessor may have died
    /// rather than released, and the one before it may still hold.
    #[allow(clippy::too_many_arguments)]
    async fn wait_turn(
        &self,
        s: &ZkSession,
        dir: &str,
        me: i64,
        attempt: u64,
        wait: Wait,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<(), LockError> {
        let mut swept = false;
        // The herd, and a semaphore's first waiter, watch the whole directory with the read
        // itself (no change between the read and the watch can be missed): any change wakes
        // them.
        let mut watch_dir = wait.herd;
        let is_permit = matches!(wait.claim, Claim::Permit { .. });
        // The sequence number of a permit ahead known to hold already.
        let mut granted_ahead: Option<i64> = None;
        // Whether the last wait on one node ahead ended with its watch: still behind after it,
        // that node left without the lock passing to us (a waiter whose session expired or who
        // gave up): the queue correcting itself, not a release ([`Tally::queue_wakeups`]). Not
        // for a permit, whose watch also hears the grant mark of the one ahead.
        let mut woken = false;
        loop {
            tally.requests(1);
            let (children, dir_watch) = if watch_dir {
                match idempotent(budget, "getChildren", || {
                    s.client.list_and_watch_children(dir)
                })
                .await?
                {
                    Ok((c, w)) => (c, Some(w)),
                    Err(e) => return Err(zk_err(dir, e)),
                }
            } else {
                match idempotent(budget, "getChildren", || s.client.list_children(dir)).await? {
                    Ok(c) => (c, None),
                    Err(e) => return Err(zk_err(dir, e)),
                }
            };
            self.janitor.cluster_answered();
            let mut queue: Vec<(i64, String)> = children
                .into_iter()
                .filter_map(|c| Some((sequence(&c)?, c)))
                .collect();
            queue.sort();
            let tag = session_tag(s);
            let own = queue
                .iter()
                .filter(|(n, c)| *n != me && c.starts_with(&tag))
                .count() as u64;
            if own > 0 {
                // Leftovers of ours (a lost answer to a create or delete): we would wait for
                // ourselves. Remove them (never a node of this attempt or of a lock we hold)
                // and read the queue again. A node of ours that stays is a lock we hold.
                if swept {
                    return Err(already_held(dir));
                }
                swept = true;
                tally.requests(1 + 2 * own);
                let leftover = Mine::Leftover { current: attempt };
                sweep_own(s, dir, leftover, &self.live, budget).await?;
                continue;
            }
            let Some(pos) = queue.iter().position(|(n, _)| *n == me) else {
                return Err(LockError::Lost {
                    key: dir.to_string(),
                    why: "our queue node vanished while waiting (session expired?)".into(),
                });
            };
            let blocks_readers = |i: usize| Claim::word_blocks_readers(claim_word(&queue[i].1));
            // The calibration's flaw: a writer that waits only for writers, as a reader does.
            let rule = match wait.claim {
                Claim::Write if wait.skips_readers => Claim::Read,
                other => other,
            };
            let turn = turn(rule, pos, blocks_readers);
            if std::mem::take(&mut woken) && !matches!(turn, Turn::Granted) {
                tally.queue_wakeups(1);
            }
            let ahead = match turn {
                Turn::Granted => return Ok(()),
                Turn::Behind(i) if !wait.herd && Some(queue[i].0) != granted_ahead => i,
                Turn::Behind(_) | Turn::FirstWaiter => {
                    match dir_watch {
                        Some(w) => {
                            Self::sleep_on(w, self.config.fallback_poll, budget, tally).await?;
                        }
                        // Just became a semaphore's first waiter: read again, watching.
                        None => watch_dir = true,
                    }
                    continue;
                }
            };
            watch_dir = false;
            let pred = format!("{dir}/{}", queue[ahead].1);
            // getData rather than exists: a watch on a node that is already gone is not left
            // behind (exists would watch for its re-creation).
            tally.requests(1);
            let watcher =
                match idempotent(budget, "getData", || s.client.get_and_watch_data(&pred)).await? {
                    // A permit ahead that already marked its grant (its data written again)
                    // will not change until it leaves: we wait as the first waiter instead.
                    Ok((_, stat, _)) if is_permit && stat.version > 0 => {
                        granted_ahead = Some(queue[ahead].0);
                        watch_dir = true;
                        continue;
                    }
                    Ok((_, _, w)) => w,
                    Err(zk::Error::NoNode) => continue,
                    Err(e) => return Err(zk_err(&pred, e)),
                };
            let heard = Self::sleep_on(watcher, self.config.fallback_poll, budget, tally).await?;
            woken = heard && !is_permit;
        }
    }

    /// Waits for `watcher` to fire, or for the fallback poll interval (the same as the herd's,
    /// so the two strategies differ only in who is woken: a lost notification costs one poll
    /// interval, visible as a fallback poll), or for the deadline: whether the watch fired.
    async fn sleep_on(
        watcher: zk::OneshotWatcher,
        poll: std::time::Duration,
        budget: &Budget,
        tally: &Tally,
    ) -> Result<bool, LockError> {
        tokio::select! {
            _ = watcher.changed() => {
                tally.wakeups(1);
                return Ok(true);
            }
            _ = tokio::time::sleep(poll) => tally.fallback_poll(),
            _ = tokio::time::sleep_until(budget.deadline().into()) => return Err(budget.timeout()),
        }
        Ok(false)
    }
}

/// How a queued acquisition waits: what it claims, and whether it is the herd (woken by every
/// change of the queue) or a predecessor waiter (watching one node, see [`turn`]).
#[derive(Debug, Clone, Copy)]
struct Wait {
    claim: Claim,
    herd: bool,
    /// `unsafe-writer-skips-readers`: a writer waits for the writers ahead only.
    skips_readers: bool,
}

/// The part of a queue node's name that says its claim: nothing for an exclusive lock (so its
/// nodes keep the name they always had), `read-`, `write-` or `permit-` otherwise.
fn claim_infix(claim: Claim) -> String {
    match claim {
        Claim::Exclusive => String::new(),
        other => format!("{}-", other.word()),
    }
}

/// The claim word of queue node `name` (`<session tag>[<word>-]lock-<sequence>`): `lock` when
/// it has none.
fn claim_word(name: &str) -> &str {
    let body = name.split_once('-').map_or(name, |(_, rest)| rest);
    match body.split_once('-') {
        Some((word, rest)) if rest.starts_with(SEQ_PREFIX) => word,
        _ => Claim::Exclusive.word(),
    }
}

/// The error for acquiring a key this client already holds (one acquisition per key per client).
fn already_held(key: &str) -> LockError {
    LockError::Server(format!(
        "this client already holds '{key}' or is acquiring it: release it before acquiring it again"
    ))
}

impl Recipe for ZookeeperRecipe {
    fn system(&self) -> System {
        System::Zookeeper
    }

    async fn acquire_claim(
        &self,
        key: &str,
        strategy: Strategy,
        claim: Claim,
        deadline: Instant,
        tally: &Tally,
    ) -> Result<Lease, LockError> {
        check_strategy(System::Zookeeper, strategy)?;
        if strategy == Strategy::UnsafeWriterSkipsReaders
            && !matches!(claim, Claim::Read | Claim::Write)
        {
            // A read-write lock's calibration: the plan never asks it for another kind.
            return Err(LockError::KindUnsupported {
                system: System::Zookeeper,
                claim: claim.word(),
            });
        }
        let budget =
            Budget::acquire(key, deadline, self.config.request_timeout).retrying(self.config.retry);
        let att = Attempt {
            id: rand::random(),
            unanswered: Unanswered::default(),
            queued: Mutex::new(None),
        };
        let mut backoff = budget.backoff();
        let got = loop {
            let herd = strategy == Strategy::Herd;
            let skips_readers = strategy == Strategy::UnsafeWriterSkipsReaders;
            let tried = if herd && claim == Claim::Exclusive {
                self.acquire_herd(key, &att, &budget, tally).await
            } else {
                // The kinds that share the lock queue under either strategy; the herd's
                // waiters watch the whole queue.
                let wait = Wait {
                    claim,
                    herd,
                    skips_readers,
                };
                self.acquire_predecessor(key, &att, wait, &budget, tally)
                    .await
            };
            match tried {
                // A session that ended (here or on the server) is replaced at the next try, as
                // Curator retries SESSIONEXPIRED; what it left goes to the janitor.
                Err(e) if e.is_retryable() || matches!(e, LockError::Lost { .. }) => {
                    if !backoff.wait(deadline).await {
                        break Err(budget.timeout());
                    }
                }
                other => break other,
            }
        };
        let Err(e) = got else { return got };
        // Our queue node would block the queue (and, at its head, hold the lock) until its
        // session ended: taken back before the failure is reported, unless the ensemble does
        // not answer in a request timeout; then the janitor goes on.
        let queued = att.queued.locked().take();
        if let Some((path, owner)) = queued {
            let chore = ZkChore::Node {
                path,
                owner,
                which: Mine::Attempt(att.id),
            };
            let limit = Instant::now() + self.config.request_timeout;
            self.janitor.confirm(chore, limit, tally).await;
        }
        match att.unanswered.last() {
            Some(unknown) => {
                let until = deadline + self.config.resolve_timeout;
                Err(self.withdraw(key, &att, unknown, until, tally).await)
            }
            None => Err(e),
        }
    }

    async fn release(&self, lease: Lease) -> Result<(), LockError> {
        let h = crate::recipe::own_handle::<Handle>(lease.handle, &lease.key, System::Zookeeper)?;
        h.holders.forget(h.holder);
        let lost = |why: &str| LockError::Lost {
            key: lease.key.clone(),
            why: why.to_string(),
        };
        let s = self.session.lock().await.clone();
        if s.client.session_id().0 != h.session_id || s.holders.dead().is_some() {
            // Ended here, but perhaps not on the server: its node goes when the ensemble
            // answers.
            self.node_chore(&h.path, h.session_id, h.attempt);
            return Err(lost("the session that held it has ended"));
        }
        self.live.locked().remove(&h.attempt);
        let budget = Budget::cleanup(&lease.key, self.config.request_timeout, 3);
        match delete_own(&s, &h.path, Mine::Attempt(h.attempt), &self.live, &budget).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(lost(
                "the lock node is gone or now belongs to another session",
            )),
            Err(e) => {
                if e.is_retryable() {
                    // Curator's guaranteed delete: until the ensemble confirms it.
                    self.node_chore(&h.path, h.session_id, h.attempt);
                }
                Err(e)
            }
        }
    }

    async fn crash(self) {
        // Detached session: dropping the last client closes the connection without a
        // CloseSession, so the server keeps the ephemeral nodes until the session times out.
        drop(self);
    }
}
