//! The Lua scripts both Redis recipes run, and the key layout they share.
//!
//! Every state change of a lock is one script, so it is atomic on the server: take (with the
//! fencing counter), queue, give back (compare owner, then delete and notify), renew. Redlock runs
//! the same scripts on each of its independent masters.
//!
//! Layout for a lock `K` (`prefix/key`): `K` holds the owner value with a TTL; `K:fence` the
//! fencing counter (kept forever so tokens never restart); `K:tickets` the queue ticket counter;
//! `K:q` the FIFO queue (sorted set, score = ticket); `K:qx` each queue entry's expiry in server
//! milliseconds (sorted set), so a waiter that dies stops blocking the queue once its entry
//! expires; `K:tent` the tentative entries (Redlock's two-phase ticket, see `redlock.rs`).
//! Channels: `K:released` for herd waiters, `K:w:<owner>` for one queued waiter.
//! The kinds that share the lock (read-write lock, semaphore; see [`SHARED_HELPERS`]) keep their
//! queue in `K:q`, `K:qx` and `K:tickets` too, with `K:h` (hash: granted entry → its fencing
//! token) and `K:n` (the semaphore's permits); they never write `K` itself. `K:count` is
//! `unsafe-get-set`'s holder count.
//! The scripts build the per-waiter channel names themselves: fine for standalone Redis
//! (channels are not keys), and Sentinel and Redlock deployments are not Redis Cluster.

use std::sync::LazyLock;

use ::redis::Script;

/// Key names of one lock.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    pub lock: String,
    pub fence: String,
    pub tickets: String,
    pub queue: String,
    pub expiry: String,
    pub tentative: String,
    /// The kinds that share the lock: the queue entries granted, owner → fencing token.
    pub holders: String,
    /// The kinds that share the lock: a semaphore's permits, as its takes last said.
    pub permits: String,
    /// `unsafe-get-set`: the holder count.
    pub count: String,
}

impl Keys {
    pub fn new(prefix: &str, key: &str) -> Keys {
        let lock = format!("{}/{}", prefix.trim_end_matches('/'), key);
        Keys {
            fence: format!("{lock}:fence"),
            tickets: format!("{lock}:tickets"),
            queue: format!("{lock}:q"),
            expiry: format!("{lock}:qx"),
            tentative: format!("{lock}:tent"),
            holders: format!("{lock}:h"),
            permits: format!("{lock}:n"),
            count: format!("{lock}:count"),
            lock,
        }
    }
    /// Where herd waiters hear about releases.
    pub fn released_channel(&self) -> String {
        format!("{}:released", self.lock)
    }
    /// Where the queued waiter `owner` hears that it is at the head of the queue.
    pub fn wake_channel(&self, owner: &str) -> String {
        format!("{}:w:{owner}", self.lock)
    }
}

/// Helpers prepended to the queue scripts.
const HELPERS: &str = r#"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Drops heads whose waiter stopped refreshing its entry (it died or gave up); returns the head
-- and whether it dropped any.
local function purge(q, qx, tent, now)
  local dropped = false
  while true do
    local head = redis.call('ZRANGE', q, 0, 0)[1]
    if not head then return nil, dropped end
    local exp = tonumber(redis.call('ZSCORE', qx, head))
    if exp and exp > now then return head, dropped end
    redis.call('ZREM', q, head)
    redis.call('ZREM', qx, head)
    redis.call('SREM', tent, head)
    dropped = true
  end
end
-- Tells only the head of the queue that the lock is free (a tentative head will try by itself),
-- with `msg`. Never `from`, the caller: a Redlock waiter giving back what it won while it is
-- still first here is not woken by its own give-back (it would only retry at once, in a loop).
local function wake_head(lock, q, qx, tent, now, from, msg)
  local head = purge(q, qx, tent, now)
  if head and head ~= from and redis.call('EXISTS', lock) == 0
      and redis.call('SISMEMBER', tent, head) == 0 then
    redis.call('PUBLISH', lock .. ':w:' .. head, msg)
  end
end
"#;

/// Herd take. KEYS: lock, fence. ARGV: owner, ttl ms.
/// Returns {token, pttl, holder}: token > 0 when granted (pttl 0, holder ''); else the
/// holder's remaining TTL and its owner value (Redlock tells a holder that has a quorum of
/// masters from a split vote by it).
/// Granting again to the same owner makes a retried request (first reply lost) idempotent.
const HERD_ACQUIRE: &str = r#"
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {redis.call('INCR', KEYS[2]), 0, ''}
end
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {tonumber(redis.call('GET', KEYS[2]) or '0'), 0, ''}
end
return {0, redis.call('PTTL', KEYS[1]), cur}
"#;

/// Queue take. KEYS: lock, fence, queue, expiry, tickets, tentative.
/// ARGV: owner, ttl ms, entry ttl ms, mode, ticket, wake message.
/// mode `propose` takes a ticket if the owner has none; `tentative` does the same but marks the
/// entry tentative (never granted until finalised); `final` sets the given ticket (re-adding an
/// entry that expired) and raises the ticket counter to it.
/// Returns {token, ticket, hint}: token > 0 when granted; hint -1 = others ahead (wait for the
/// wake message), otherwise the holder's remaining TTL (first in line: at the head, or right
/// behind the holder's own entry).
const FAIR_ACQUIRE: &str = r#"
local now = now_ms()
local owner = ARGV[1]
local ttl = tonumber(ARGV[2])
local entry_ttl = tonumber(ARGV[3])
local was_tentative = redis.call('SISMEMBER', KEYS[6], owner) == 1
-- A tentative entry at the head blocks the queue (it is never granted): finalising it behind
-- another waiter lets that one in, which must then be told.
local blocked = was_tentative and redis.call('ZRANGE', KEYS[3], 0, 0)[1] == owner
if ARGV[4] == 'final' then
  local t = tonumber(ARGV[5])
  redis.call('ZADD', KEYS[3], t, owner)
  redis.call('SREM', KEYS[6], owner)
  if tonumber(redis.call('GET', KEYS[5]) or '0') < t then redis.call('SET', KEYS[5], t) end
elseif not redis.call('ZSCORE', KEYS[3], owner) then
  redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[5]), owner)
  if ARGV[4] == 'tentative' then redis.call('SADD', KEYS[6], owner) end
end
local ticket = tonumber(redis.call('ZSCORE', KEYS[3], owner))
redis.call('ZADD', KEYS[4], now + entry_ttl, owner)
local head, dropped = purge(KEYS[3], KEYS[4], KEYS[6], now)
if head == owner and redis.call('SISMEMBER', KEYS[6], owner) == 0 then
  local cur = redis.call('GET', KEYS[1])
  if not cur then
    redis.call('SET', KEYS[1], owner, 'PX', ttl)
    -- A holder's entry lives as long as its lock, so an expired holder stops blocking the queue.
    redis.call('ZADD', KEYS[4], now + ttl, owner)
    return {redis.call('INCR', KEYS[2]), ticket, 0}
  elseif cur == owner then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('ZADD', KEYS[4], now + ttl, owner)
    return {tonumber(redis.call('GET', KEYS[2]) or '0'), ticket, 0}
  end
  return {0, ticket, redis.call('PTTL', KEYS[1])}
end
-- Finalising moved this entry from the head behind another one, or dropping dead heads made
-- another waiter first: that one is told, as it only refreshes its entry now and then. (Waking
-- it on every finalisation woke a head already woken by the release: a useless wake-up.)
if blocked or dropped then
  wake_head(KEYS[1], KEYS[3], KEYS[4], KEYS[6], now, owner, ARGV[6])
end
-- First in line behind the holder (whose entry heads the queue while it holds): the lock is
-- free at the latest when the holder's TTL ends, so that is when to look again unwoken.
if head and redis.call('GET', KEYS[1]) == head and redis.call('ZRANK', KEYS[3], owner) == 1
    and redis.call('SISMEMBER', KEYS[6], owner) == 0 then
  return {0, ticket, redis.call('PTTL', KEYS[1])}
end
return {0, ticket, -1}
"#;

/// Give back (also: leave the queue, undo a partial Redlock grant).
/// KEYS: lock, fence, queue, expiry, tentative. ARGV: owner, token (0 = none), wake message
/// ('' = none), keep queue entry (1/0). Deletes the lock only if `owner` holds it; raises the
/// fencing counter to `token` so the next grant on this server exceeds it (Redlock's monotonic
/// tokens); with a wake message, publishes it to herd waiters and to the queue head (unless that
/// is `owner`). Returns 1 if it deleted the lock.
const RELEASE: &str = r#"
local now = now_ms()
local owner = ARGV[1]
local released = 0
if redis.call('GET', KEYS[1]) == owner then
  redis.call('DEL', KEYS[1])
  released = 1
end
local t = tonumber(ARGV[2])
if t > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') < t then redis.call('SET', KEYS[2], t) end
if ARGV[4] ~= '1' then
  redis.call('ZREM', KEYS[3], owner)
  redis.call('ZREM', KEYS[4], owner)
  redis.call('SREM', KEYS[5], owner)
end
if ARGV[3] ~= '' then
  if released == 1 then redis.call('PUBLISH', KEYS[1] .. ':released', ARGV[3]) end
  wake_head(KEYS[1], KEYS[3], KEYS[4], KEYS[5], now, owner, ARGV[3])
end
return released
"#;

/// Watchdog renewal. KEYS: lock, expiry. ARGV: owner, ttl ms.
/// Returns 1 if `owner` still holds the lock (TTL extended), 0 if it does not.
const RENEW: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[2]), ARGV[1])
end
return 1
"#;

/// Resolve an acquisition whose outcome is unknown (a take's answer was lost).
/// KEYS: lock, fence, queue, expiry, tentative. ARGV: owner, ttl ms, wake message.
/// If `owner` holds the lock, a lost take granted it: renew it (as a take that finds its own
/// owner does) and return the fencing counter, which only grants raise on a Redis master, so it
/// is still the token that grant drew. Otherwise leave the queue (as a give-back does, waking
/// the head the entry may have blocked) and return 0. On the same connection as the takes, it
/// runs after any of them the server still had to read.
const RESOLVE: &str = r#"
local now = now_ms()
local owner = ARGV[1]
if redis.call('GET', KEYS[1]) == owner then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('ZSCORE', KEYS[4], owner) then
    redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), owner)
  end
  return tonumber(redis.call('GET', KEYS[2]) or '0')
end
redis.call('ZREM', KEYS[3], owner)
redis.call('ZREM', KEYS[4], owner)
redis.call('SREM', KEYS[5], owner)
wake_head(KEYS[1], KEYS[3], KEYS[4], KEYS[5], now, owner, ARGV[3])
return 0
"#;

/// Helpers of the kinds that share the lock (read-write lock, semaphore), prepended to their
/// scripts after [`HELPERS`]. The queue is the whole state, as ZooKeeper's sequential nodes and
/// etcd's create revisions are: an entry holds when [`crate::recipe::claim::turn`]'s
/// rule says so for its place in the queue, and a holder stays in the queue until it leaves.
/// `granted` is `claim::turn` written in Lua over the whole queue at once, so that a script
/// sees, atomically, every entry a removal lets in:
/// - a writer (or a mutex entry, `lock`) holds at the head;
/// - a reader holds when no entry ahead of it is anything but a reader (FIFO: a reader behind
///   a waiting writer waits for it);
/// - a permit holds when fewer than `permits` entries are ahead of it.
///
/// Entries only join at the tail and leave from anywhere, so an entry the rule grants stays
/// granted until it leaves: the rule is monotone, and a grant is never taken back by a newcomer.
pub(crate) const SHARED_HELPERS: &str = r#"
-- The claim an entry was queued with: the word its owner value ends with (`<owner>-read`,
-- `-write`, `-permit`); an entry without one is a mutex's (`lock`). As `Claim::word`.
local function word_of(m)
  return string.match(m, '%-(%a+)$') or 'lock'
end
-- `claim::turn` over the whole queue (oldest first): the set of entries it grants.
local function granted(members, permits)
  local g = {}
  local blocker_ahead = false
  for i, m in ipairs(members) do
    local w = word_of(m)
    local ok
    if w == 'read' then ok = not blocker_ahead
    elseif w == 'permit' then ok = i <= permits
    else ok = i == 1 end
    if ok then g[m] = true end
    -- `Claim::word_blocks_readers`: anything but a reader.
    if w ~= 'read' then blocker_ahead = true end
  end
  return g
end
local function permits_of(n)
  return math.max(tonumber(redis.call('GET', n) or '1'), 1)
end
-- Drops every entry whose expiry passed: a waiter that stopped refreshing its entry, a holder
-- whose lease ended. Returns how many.
local function purge_expired(q, qx, h, now)
  local gone = redis.call('ZRANGEBYSCORE', qx, '-inf', now)
  for _, m in ipairs(gone) do
    redis.call('ZREM', q, m)
    redis.call('ZREM', qx, m)
    redis.call('HDEL', h, m)
  end
  return #gone
end
-- The start of every script that may remove entries: the server time, the permits, the
-- entries granted before any removal (for `wake_granted`), and how many expired ones it dropped.
local function removal_start(q, qx, h, n)
  local now = now_ms()
  local permits = permits_of(n)
  local before = granted(redis.call('ZRANGE', q, 0, -1), permits)
  return now, permits, before, purge_expired(q, qx, h, now)
end
-- After entries left the queue: tells the herd (`lock:released`), and each entry the rule
-- grants now and did not grant `before` the removals, on its own channel (predecessor); never
-- `from` (the caller) nor an entry that already holds.
local function wake_granted(lock, q, h, permits, before, from, msg)
  redis.call('PUBLISH', lock .. ':released', msg)
  local now_granted = granted(redis.call('ZRANGE', q, 0, -1), permits)
  for m in pairs(now_granted) do
    if not before[m] and m ~= from and redis.call('HEXISTS', h, m) == 0 then
      redis.call('PUBLISH', lock .. ':w:' .. m, msg)
    end
  end
end
"#;

/// Take of a kind that shares the lock. KEYS: queue, expiry, tickets, holders, fence, permits.
/// ARGV: owner (ending `-read`, `-write` or `-permit`), ttl ms, entry ttl ms, permits, wake
/// message, lock name (the channels' base).
/// Queues the owner if it is not queued (a new ticket at the tail), drops expired entries
/// (waking whom that lets in), and grants when the rule does: the fencing counter's next value,
/// kept in the holders hash, and the entry's expiry becomes the lease's end. A retried take of
/// an owner already granted returns the same token (idempotent, as the mutex's takes).
/// Returns {token, ticket, hint}: token > 0 when granted; else hint = the time until the first
/// lease ends among the holders it waits for when all it waits for hold (no message comes when
/// a holder dies), -1 when it waits for a waiter too (it is told when its turn comes).
const SHARED_ACQUIRE: &str = r#"
local owner = ARGV[1]
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[6], ARGV[4])
local now, permits, before, dropped = removal_start(KEYS[1], KEYS[2], KEYS[4], KEYS[6])
if dropped > 0 then
  wake_granted(ARGV[6], KEYS[1], KEYS[4], permits, before, owner, ARGV[5])
end
if not redis.call('ZSCORE', KEYS[1], owner) then
  redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[3]), owner)
end
local ticket = tonumber(redis.call('ZSCORE', KEYS[1], owner))
local token = redis.call('HGET', KEYS[4], owner)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
if not token and granted(members, permits)[owner] then
  token = redis.call('INCR', KEYS[5])
  redis.call('HSET', KEYS[4], owner, token)
end
if token then
  redis.call('ZADD', KEYS[2], now + ttl, owner)
  return {tonumber(token), ticket, 0}
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), owner)
local reader = word_of(owner) == 'read'
local soonest = nil
for _, m in ipairs(members) do
  if m == owner then break end
  if not reader or word_of(m) ~= 'read' then
    if redis.call('HEXISTS', KEYS[4], m) == 0 then return {0, ticket, -1} end
    local exp = tonumber(redis.call('ZSCORE', KEYS[2], m))
    if not soonest or exp < soonest then soonest = exp end
  end
end
if not soonest then return {0, ticket, -1} end
return {0, ticket, math.max(soonest - now, 0)}
"#;

/// Give back a kind that shares the lock (also: leave the queue after giving up).
/// KEYS: queue, expiry, holders, permits. ARGV: owner, wake message, lock name.
/// Drops expired entries, then the owner's entry; wakes whom that lets in. Returns 1 if the
/// owner held (its lease had not ended), else 0.
const SHARED_RELEASE: &str = r#"
local owner = ARGV[1]
local _, permits, before, removed = removal_start(KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local released = redis.call('HEXISTS', KEYS[3], owner)
removed = removed + redis.call('ZREM', KEYS[1], owner)
redis.call('ZREM', KEYS[2], owner)
redis.call('HDEL', KEYS[3], owner)
if removed > 0 then
  wake_granted(ARGV[3], KEYS[1], KEYS[3], permits, before, owner, ARGV[2])
end
return released
"#;

/// Resolve an acquisition of a kind that shares the lock whose take's answer was lost.
/// KEYS: queue, expiry, holders, permits. ARGV: owner, ttl ms, wake message, lock name.
/// If the owner holds (a lost take granted it), renews its lease and returns its token;
/// otherwise leaves the queue as a give-back does and returns 0.
const SHARED_RESOLVE: &str = r#"
local owner = ARGV[1]
local now, permits, before, removed = removal_start(KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local token = redis.call('HGET', KEYS[3], owner)
if token then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), owner)
else
  removed = removed + redis.call('ZREM', KEYS[1], owner)
  redis.call('ZREM', KEYS[2], owner)
end
if removed > 0 then
  wake_granted(ARGV[4], KEYS[1], KEYS[3], permits, before, owner, ARGV[3])
end
return tonumber(token or '0')
"#;

/// Watchdog renewal of a kind that shares the lock. KEYS: expiry, holders. ARGV: owner, ttl ms.
/// Returns 1 if the owner still holds (its lease had not ended; now extended), else 0.
const SHARED_RENEW: &str = r#"
local now = now_ms()
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
local exp = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not exp or exp <= now then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
"#;

pub(crate) static SHARED_ACQUIRE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_HELPERS}{SHARED_ACQUIRE}")));
pub(crate) static SHARED_RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_HELPERS}{SHARED_RELEASE}")));
pub(crate) static SHARED_RESOLVE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_HELPERS}{SHARED_RESOLVE}")));
pub(crate) static SHARED_RENEW_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_RENEW}")));

pub(crate) static HERD_ACQUIRE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(HERD_ACQUIRE));
pub(crate) static FAIR_ACQUIRE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{FAIR_ACQUIRE}")));
pub(crate) static RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{RELEASE}")));
pub(crate) static RENEW_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{RENEW}")));
pub(crate) static RESOLVE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{RESOLVE}")));

/// What a give-back does with the caller's place in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueEntry {
    /// Keep it: a Redlock waiter giving back partial grants stays in line.
    Keep,
    /// Leave the queue (a release, or an acquisition that gave up).
    Leave,
}

/// Whether a give-back tells the waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notify {
    /// Wake the herd and the queue head: the lock may be free for them now.
    Waiters,
    /// Tell nobody: the lock was never free for anyone else to take.
    Nobody,
}

/// How a queue take treats the caller's ticket (see `FAIR_ACQUIRE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TicketMode {
    Propose,
    Tentative,
    Final(u64),
}

impl TicketMode {
    pub fn args(self) -> (&'static str, u64) {
        match self {
            TicketMode::Propose => ("propose", 0),
            TicketMode::Tentative => ("tentative", 0),
            TicketMode::Final(t) => ("final", t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_the_lock_name_and_channels_embed_the_owner() {
        let k = Keys::new("/lockbench/", "orders");
        assert_eq!(k.lock, "/lockbench/orders");
        assert_eq!(k.fence, "/lockbench/orders:fence");
        assert_eq!(k.queue, "/lockbench/orders:q");
        assert_eq!(k.released_channel(), "/lockbench/orders:released");
        // The scripts build this name themselves (`lock .. ':w:' .. head`): keep them in step.
        assert_eq!(k.wake_channel("c1:7"), "/lockbench/orders:w:c1:7");
        assert!(RELEASE.contains("':released'") && HELPERS.contains("':w:'"));
    }

    #[test]
    fn ticket_modes_map_to_script_arguments() {
        assert_eq!(TicketMode::Propose.args(), ("propose", 0));
        assert_eq!(TicketMode::Tentative.args(), ("tentative", 0));
        assert_eq!(TicketMode::Final(42).args(), ("final", 42));
    }
}
