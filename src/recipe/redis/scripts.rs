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
