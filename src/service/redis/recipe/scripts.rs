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
//! expires; `K:tent` the tentative entries (Redlock's two-phase ticket, see
//! `service/redlock/recipe.rs`).
//! Channels: `K:released` for herd waiters, `K:w:<owner>` for one queued waiter.
//! The kinds that share the lock (read-write lock, semaphore; see [`SHARED_HELPERS`]) keep their
//! queue in `K:q`, `K:qx` and `K:tickets` too, with `K:h` (hash: granted entry → its fencing
//! token) and `K:n` (the semaphore's permits); they never write `K` itself. `K:count` is
//! `unsafe-get-set`'s holder count.
//! The scripts build the per-waiter channel names themselves: fine for standalone Redis
//! (channels are not keys), and Sentinel and Redlock deployments are not Redis Cluster.

use std::sync::{Arc, LazyLock};

use ::redis::Script;

use crate::system::LeaseClock;

/// What a lock's queue-entry deadline set is named after the lock key (`K:qx`): the one place
/// the scripts keep server-clock times (`TIME` + a TTL, as sorted-set scores), so the modelled
/// clock fault moves these too (`fault::clock::model`, which reads it as
/// [`LeaseClock::REDIS_DEADLINES_SUFFIX`]).
pub const DEADLINES_SUFFIX: &str = LeaseClock::REDIS_DEADLINES_SUFFIX;

/// Key names of one lock, built once per acquisition and shared (a clone is a reference
/// count): the holder's handle, its watchdog and any give-back the janitor retries read the
/// same names.
#[derive(Debug, Clone)]
pub(crate) struct Keys(Arc<KeyNames>);

/// The names themselves (see the layout above), all in one string: building them costs one
/// allocation rather than one per name, on every acquisition.
#[derive(Debug)]
pub(crate) struct KeyNames {
    names: String,
    /// Where each name ends in `names`, in [`NAME_SUFFIXES`]' order; each starts where the
    /// previous one ends (the first at 0).
    ends: [usize; NAME_SUFFIXES.len()],
}

/// Each name's suffix after the lock key, in [`KeyNames::ends`]' order: the lock itself, its
/// fencing counter, the queue's ticket counter, the queue, the entries' deadlines, the
/// tentative entries, the holders of the kinds that share the lock (entry → fencing token),
/// a semaphore's permits as its takes last said, and `unsafe-get-set`'s holder count.
const NAME_SUFFIXES: [&str; 9] = [
    "",
    ":fence",
    ":tickets",
    ":q",
    DEADLINES_SUFFIX,
    ":tent",
    ":h",
    ":n",
    ":count",
];

impl std::ops::Deref for Keys {
    type Target = KeyNames;
    fn deref(&self) -> &KeyNames {
        &self.0
    }
}

impl Keys {
    pub fn new(prefix: &str, key: &str) -> Keys {
        let prefix = prefix.trim_end_matches('/');
        let lock_len = prefix.len() + 1 + key.len();
        let suffixes: usize = NAME_SUFFIXES.iter().map(|s| s.len()).sum();
        let mut names = String::with_capacity(lock_len * NAME_SUFFIXES.len() + suffixes);
        let mut ends = [0; NAME_SUFFIXES.len()];
        for (end, suffix) in ends.iter_mut().zip(NAME_SUFFIXES) {
            names.push_str(prefix);
            names.push('/');
            names.push_str(key);
            names.push_str(suffix);
            *end = names.len();
        }
        Keys(Arc::new(KeyNames { names, ends }))
    }
}

impl KeyNames {
    /// Name `i` of [`NAME_SUFFIXES`].
    fn name(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.names[start..self.ends[i]]
    }
    /// `K`: the lock key, holding the owner value with a TTL.
    pub fn lock(&self) -> &str {
        self.name(0)
    }
    /// `K:fence`: the fencing counter, kept forever so tokens never restart.
    pub fn fence(&self) -> &str {
        self.name(1)
    }
    /// `K:tickets`: the queue's ticket counter.
    pub fn tickets(&self) -> &str {
        self.name(2)
    }
    /// `K:q`: the FIFO queue (sorted set, score = ticket).
    pub fn queue(&self) -> &str {
        self.name(3)
    }
    /// `K:qx`: each queue entry's expiry in server milliseconds.
    pub fn expiry(&self) -> &str {
        self.name(4)
    }
    /// `K:tent`: the tentative entries (Redlock's two-phase ticket).
    pub fn tentative(&self) -> &str {
        self.name(5)
    }
    /// `K:h`: the kinds that share the lock: the queue entries granted, owner → fencing token.
    pub fn holders(&self) -> &str {
        self.name(6)
    }
    /// `K:n`: the kinds that share the lock: a semaphore's permits, as its takes last said.
    pub fn permits(&self) -> &str {
        self.name(7)
    }
    /// `K:count`: `unsafe-get-set`'s holder count.
    pub fn count(&self) -> &str {
        self.name(8)
    }
    /// The keys every script of the kinds that share the lock takes, in its order (`K` in
    /// [`SHARED_HELPERS`]).
    pub fn shared(&self) -> [&str; 7] {
        [
            self.queue(),
            self.expiry(),
            self.tickets(),
            self.holders(),
            self.fence(),
            self.permits(),
            self.tentative(),
        ]
    }
    /// Where herd waiters hear about releases.
    pub fn released_channel(&self) -> String {
        format!("{}:released", self.lock())
    }
    /// Where the queued waiter `owner` hears that it is at the head of the queue.
    pub fn wake_channel(&self, owner: &str) -> String {
        format!("{}:w:{owner}", self.lock())
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
///
/// The free lock's grant, the common case, is the `SET NX` itself (one call, where a `GET`
/// first and then a `SET` were two).
const HERD_ACQUIRE: &str = r#"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {redis.call('INCR', KEYS[2]), 0, ''}
end
local cur = redis.call('GET', KEYS[1])
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

/// The start of both releases ([`RELEASE`], [`HERD_RELEASE`]), so they check the owner and
/// raise the fencing counter alike. KEYS: lock, fence. ARGV: owner, token (0 = none). Deletes
/// the lock only if `owner` holds it (`released` says whether it did) and raises the fencing
/// counter to `token`, so the next grant on this server exceeds it (Redlock's monotonic
/// tokens).
const GIVE_BACK: &str = r#"
local released = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  released = 1
end
local t = tonumber(ARGV[2])
if t > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') < t then redis.call('SET', KEYS[2], t) end
"#;

/// Give back from a queue (also: leave it, undo a partial Redlock grant).
/// KEYS: lock, fence, queue, expiry, tentative. ARGV: owner, token (0 = none), wake message
/// ('' = none), queue entry (`1` keep it, `0` leave the queue).
/// Deletes the lock only if `owner` holds it; raises the fencing counter to `token` so the next
/// grant on this server exceeds it (Redlock's monotonic tokens); with a wake message, publishes
/// it to herd waiters and to the queue head (unless that is `owner`). Returns 1 if it deleted
/// the lock.
///
/// A herd holder, which never queued, gives back with [`HERD_RELEASE`] instead: its take never
/// touched the queue and its waiters listen on the released channel alone, so the queue's
/// three removals and its head's look-up (with the server's clock they need) would be work for
/// nothing: measured on an idle master at 8 clients (`INFO commandstats`), leaving them out
/// took the cycle's two scripts from 7.25–7.49 to 4.58–4.86 µs a call.
///
/// Starts with [`GIVE_BACK`]; this is what follows it.
const RELEASE: &str = r#"
local owner = ARGV[1]
if ARGV[4] ~= '1' then
  redis.call('ZREM', KEYS[3], owner)
  redis.call('ZREM', KEYS[4], owner)
  redis.call('SREM', KEYS[5], owner)
end
if ARGV[3] ~= '' then
  if released == 1 then redis.call('PUBLISH', KEYS[1] .. ':released', ARGV[3]) end
  wake_head(KEYS[1], KEYS[3], KEYS[4], KEYS[5], now_ms(), owner, ARGV[3])
end
return released
"#;

/// A herd holder's give-back: [`RELEASE`] for an owner that never queued (`none`), with
/// nothing of the queue's. KEYS: lock, fence. ARGV: owner, token (0 = none), wake message
/// ('' = none). Deletes the lock only if `owner` holds it, raises the fencing counter to
/// `token`, and with a wake message publishes it to herd waiters if it deleted the lock.
/// Returns 1 if it deleted the lock.
///
/// A script of its own, with two keys and three arguments and without [`HELPERS`] (whose three
/// functions every call of a script that starts with them makes anew): with the one-call take
/// above, the herd cycle's two scripts took 17.2–19.4 µs of the server's time against
/// 21.9–22.5 before, at 8 clients on one master (`INFO commandstats`; a 2-core machine,
/// 2026-12-05). Starts with [`GIVE_BACK`]; this is what follows it.
const HERD_RELEASE: &str = r#"
if released == 1 and ARGV[3] ~= '' then redis.call('PUBLISH', KEYS[1] .. ':released', ARGV[3]) end
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
/// On one master entries only join at the tail and leave from anywhere, so an entry the rule
/// grants stays granted until it leaves: the rule is monotone, and a grant is never taken back
/// by a newcomer. Redlock's final tickets can put an entry ahead of one already granted; the
/// rule then also checks what holds, so no master ever grants a writer beside anyone else.
pub(crate) const SHARED_HELPERS: &str = r#"
-- Every script of the kinds that share the lock takes the same keys (`Keys::shared`).
local K = {q = KEYS[1], qx = KEYS[2], tickets = KEYS[3], h = KEYS[4], fence = KEYS[5],
  n = KEYS[6], tent = KEYS[7]}
-- The claim an entry was queued with: the word its owner value ends with (`<owner>-read`,
-- `-write`, `-permit`); an entry without one is a mutex's (`lock`). As `Claim::word`.
local function word_of(m)
  return string.match(m, '%-(%a+)$') or 'lock'
end
-- `claim::turn` over the whole queue (oldest first): the set of entries it grants. A tentative
-- entry (Redlock's first phase) is never granted and blocks everyone behind it. On one master
-- with a queue only ever appended to, what holds already always agrees with the rule; the
-- check against the holders is for Redlock, whose final tickets may put an entry ahead of one
-- that holds: it waits until that one gives back.
local function granted(members, permits)
  local holders, writer_holds = 0, false
  for _, m in ipairs(redis.call('HKEYS', K.h)) do
    holders = holders + 1
    if word_of(m) ~= 'read' then writer_holds = true end
  end
  local g = {}
  local blocker_ahead = false
  for i, m in ipairs(members) do
    local w = word_of(m)
    local tentative = redis.call('SISMEMBER', K.tent, m) == 1
    local ok
    if tentative then ok = false
    elseif w == 'read' then ok = not blocker_ahead
    elseif w == 'permit' then ok = i <= permits
    else ok = i == 1 end
    if ok and redis.call('HEXISTS', K.h, m) == 0 then
      if w == 'read' then ok = not writer_holds
      elseif w == 'permit' then ok = holders < permits
      else ok = holders == 0 end
    end
    if ok then g[m] = true end
    -- `Claim::word_blocks_readers`: anything but a reader.
    if w ~= 'read' or tentative then blocker_ahead = true end
  end
  return g
end
local function permits_of()
  return math.max(tonumber(redis.call('GET', K.n) or '1'), 1)
end
-- Takes `m` out of the queue; 1 if it was queued.
local function leave(m)
  redis.call('ZREM', K.qx, m)
  redis.call('HDEL', K.h, m)
  redis.call('SREM', K.tent, m)
  return redis.call('ZREM', K.q, m)
end
-- The start of every script that may let someone in: the server time, the permits, the
-- entries granted before any change (for `wake_granted`), and how many expired entries it
-- dropped (a waiter that stopped refreshing its entry, a holder whose lease ended).
local function removal_start()
  local now = now_ms()
  local permits = permits_of()
  local before = granted(redis.call('ZRANGE', K.q, 0, -1), permits)
  local gone = redis.call('ZRANGEBYSCORE', K.qx, '-inf', now)
  for _, m in ipairs(gone) do leave(m) end
  return now, permits, before, #gone
end
-- After a change that may let someone in: tells each entry the rule grants now and did not
-- grant `before`, on its own channel (predecessor), never `from` (the caller) nor an entry that
-- already holds; and the herd (`lock:released`) after every removal (`removed`), or after
-- another change (a Redlock ticket made final) when it let anyone in.
local function wake_granted(lock, permits, before, from, msg, removed)
  local now_granted = granted(redis.call('ZRANGE', K.q, 0, -1), permits)
  local let_in = false
  for m in pairs(now_granted) do
    if not before[m] and m ~= from and redis.call('HEXISTS', K.h, m) == 0 then
      redis.call('PUBLISH', lock .. ':w:' .. m, msg)
      let_in = true
    end
  end
  if removed or let_in then redis.call('PUBLISH', lock .. ':released', msg) end
end
"#;

/// Take of a kind that shares the lock. KEYS: [`Keys::shared`]. ARGV: owner (ending `-read`,
/// `-write` or `-permit`), ttl ms, entry ttl ms, permits, wake message, lock name (the
/// channels' base), ticket mode, ticket (as `FAIR_ACQUIRE`'s: `propose` on one master,
/// `tentative` then `final` for Redlock).
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
redis.call('SET', K.n, ARGV[4])
local now, permits, before, changed = removal_start()
local was_tentative = redis.call('SISMEMBER', K.tent, owner) == 1
if ARGV[7] == 'final' then
  local t = tonumber(ARGV[8])
  redis.call('ZADD', K.q, t, owner)
  redis.call('SREM', K.tent, owner)
  if tonumber(redis.call('GET', K.tickets) or '0') < t then redis.call('SET', K.tickets, t) end
elseif not redis.call('ZSCORE', K.q, owner) then
  redis.call('ZADD', K.q, redis.call('INCR', K.tickets), owner)
  if ARGV[7] == 'tentative' then redis.call('SADD', K.tent, owner) end
end
-- A finalised entry no longer blocks those behind it.
if changed > 0 or (was_tentative and ARGV[7] == 'final') then
  wake_granted(ARGV[6], permits, before, owner, ARGV[5], changed > 0)
end
local ticket = tonumber(redis.call('ZSCORE', K.q, owner))
local token = redis.call('HGET', K.h, owner)
local members = redis.call('ZRANGE', K.q, 0, -1)
if not token and granted(members, permits)[owner] then
  token = redis.call('INCR', K.fence)
  redis.call('HSET', K.h, owner, token)
end
if token then
  redis.call('ZADD', K.qx, now + ttl, owner)
  return {tonumber(token), ticket, 0}
end
redis.call('ZADD', K.qx, now + tonumber(ARGV[3]), owner)
local reader = word_of(owner) == 'read'
local soonest = nil
for _, m in ipairs(members) do
  if m == owner then break end
  if not reader or word_of(m) ~= 'read' then
    if redis.call('HEXISTS', K.h, m) == 0 then return {0, ticket, -1} end
    local exp = tonumber(redis.call('ZSCORE', K.qx, m))
    if not soonest or exp < soonest then soonest = exp end
  end
end
if not soonest then return {0, ticket, -1} end
return {0, ticket, math.max(soonest - now, 0)}
"#;

/// Give back a kind that shares the lock (also: leave the queue after giving up).
/// KEYS: [`Keys::shared`]. ARGV: owner, wake message, lock name, token (0 = none), keep the
/// queue entry (1/0), entry ttl ms.
/// Drops expired entries, then the owner's grant and (unless kept: a Redlock waiter giving
/// back a partial grant stays in line) its entry; raises the fencing counter to `token` (as
/// `RELEASE` does); wakes whom that lets in, and the herd after an entry left the queue. A
/// give-back that keeps its place wakes the herd only when it lets someone in. Returns 1 if the
/// owner held (its lease had not ended), else 0.
const SHARED_RELEASE: &str = r#"
local owner = ARGV[1]
local now, permits, before, changed = removal_start()
-- An entry left the queue (an expired one, or the owner's): the herd hears it.
local removed = changed > 0
local released = redis.call('HEXISTS', K.h, owner)
local t = tonumber(ARGV[4])
if t > 0 and tonumber(redis.call('GET', K.fence) or '0') < t then redis.call('SET', K.fence, t) end
if ARGV[5] == '1' then
  -- A grant given back with the place kept: the entry still blocks those behind it, so only
  -- those it lets in (by the holders check) hear of it, never the whole herd. A herd wake on
  -- each of these, after a Redlock majority restart, had every waiter's partial grants given
  -- back wake every other waiter: hundreds of requests per client-second.
  redis.call('HDEL', K.h, owner)
  if redis.call('ZSCORE', K.q, owner) then
    redis.call('ZADD', K.qx, now + tonumber(ARGV[6]), owner)
  end
  changed = changed + released
else
  local left = leave(owner)
  changed = changed + left
  removed = removed or left > 0
end
if changed > 0 then
  wake_granted(ARGV[3], permits, before, owner, ARGV[2], removed)
end
return released
"#;

/// Resolve an acquisition of a kind that shares the lock whose take's answer was lost.
/// KEYS: [`Keys::shared`]. ARGV: owner, ttl ms, wake message, lock name.
/// If the owner holds (a lost take granted it), renews its lease and returns its token;
/// otherwise leaves the queue as a give-back does and returns 0.
const SHARED_RESOLVE: &str = r#"
local owner = ARGV[1]
local now, permits, before, changed = removal_start()
local token = redis.call('HGET', K.h, owner)
if token then
  redis.call('ZADD', K.qx, now + tonumber(ARGV[2]), owner)
else
  changed = changed + leave(owner)
end
if changed > 0 then
  wake_granted(ARGV[4], permits, before, owner, ARGV[3], true)
end
return tonumber(token or '0')
"#;

/// Watchdog renewal of a kind that shares the lock. KEYS: [`Keys::shared`]. ARGV: owner, ttl
/// ms. Returns 1 if the owner still holds (its lease had not ended; now extended), else 0.
const SHARED_RENEW: &str = r#"
local now = now_ms()
if redis.call('HEXISTS', K.h, ARGV[1]) == 0 then return 0 end
local exp = tonumber(redis.call('ZSCORE', K.qx, ARGV[1]))
if not exp or exp <= now then return 0 end
redis.call('ZADD', K.qx, now + tonumber(ARGV[2]), ARGV[1])
return 1
"#;

pub(crate) static SHARED_ACQUIRE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_HELPERS}{SHARED_ACQUIRE}")));
pub(crate) static SHARED_RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_HELPERS}{SHARED_RELEASE}")));
pub(crate) static SHARED_RESOLVE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_HELPERS}{SHARED_RESOLVE}")));
pub(crate) static SHARED_RENEW_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{SHARED_HELPERS}{SHARED_RENEW}")));

/// The Lua source of the herd recipe's take and release (owner-checked give-back), exactly as
/// the recipe sends them, for benchmarks that replay its commands without the recipe
/// (`examples/redis_client_cycle.rs`). Take: KEYS lock, fence; ARGV owner, ttl ms. Release:
/// KEYS lock, fence; ARGV owner, token (0), wake message.
pub fn herd_cycle_sources() -> (&'static str, &'static str) {
    (HERD_ACQUIRE, HERD_RELEASE_SOURCE.as_str())
}

/// The herd's release as it is sent: [`GIVE_BACK`], then [`HERD_RELEASE`].
static HERD_RELEASE_SOURCE: LazyLock<String> =
    LazyLock::new(|| format!("{GIVE_BACK}{HERD_RELEASE}"));

pub(crate) static HERD_ACQUIRE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(HERD_ACQUIRE));
pub(crate) static FAIR_ACQUIRE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{FAIR_ACQUIRE}")));
pub(crate) static RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&format!("{HELPERS}{GIVE_BACK}{RELEASE}")));
pub(crate) static HERD_RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(herd_cycle_sources().1));
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
    /// The owner never queued (a herd holder): no queue to leave and no queue head to wake,
    /// as the herd's take never touches the queue and its waiters hear the released channel.
    /// A predecessor waiter on the same key (a mixed deployment; a cell uses one strategy) is
    /// not woken by such a release: it looks again at its fallback poll. Given back by
    /// `HERD_RELEASE`.
    Never,
}

impl QueueEntry {
    /// How `RELEASE` and the shared kinds' release are told (their queue-entry argument:
    /// anything but `1` leaves the queue). `RELEASE` never hears `none`: an owner that never
    /// queued gives back with `HERD_RELEASE`, which has no queue to be told about.
    pub(crate) fn word(self) -> &'static str {
        match self {
            QueueEntry::Keep => "1",
            QueueEntry::Leave => "0",
            QueueEntry::Never => "none",
        }
    }
}

/// Whether a give-back tells the waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notify {
    /// Wake the herd and the queue head: the lock may be free for them now.
    Waiters,
    /// Tell nobody: the lock was never free for anyone else to take.
    Nobody,
    /// A queue's correction, not a release: wake the queue head (and any herd waiter) with a
    /// queue prompt (`common::queue_prompt`), so the waiter counts it apart.
    QueueHead,
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
    fn the_release_script_reads_every_queue_entry_word() {
        // `RELEASE` compares its fourth argument with this word: keep them in step.
        assert_eq!(QueueEntry::Keep.word(), "1");
        assert!(RELEASE.contains("ARGV[4] ~= '1'"));
        // Anything else leaves the queue: only `Leave` may say so.
        assert_eq!(QueueEntry::Leave.word(), "0");
        assert!(
            !RELEASE.contains("local now"),
            "the clock is read only to wake the head"
        );
        // A release that never queued goes to the herd's own script, which has no queue's
        // work, no clock and none of the helpers every call of a script would make anew.
        let (_, herd_release) = herd_cycle_sources();
        for queue_work in ["ZREM", "SREM", "TIME", "wake_head", "ARGV[4]", "KEYS[3]"] {
            assert!(!herd_release.contains(queue_work), "{queue_work}");
        }
        // Both releases check the owner and raise the fencing counter with the same lines.
        assert_eq!(herd_release, format!("{GIVE_BACK}{HERD_RELEASE}"));
        assert!(!GIVE_BACK.contains("PUBLISH") && GIVE_BACK.contains("released = 1"));
    }

    #[test]
    fn keys_share_the_lock_name_and_channels_embed_the_owner() {
        let k = Keys::new("/lockbench/", "orders");
        assert_eq!(k.lock(), "/lockbench/orders");
        assert_eq!(k.fence(), "/lockbench/orders:fence");
        assert_eq!(k.queue(), "/lockbench/orders:q");
        // Every name, cut from the one string they share: each starts where the last ended.
        let rest = [
            (k.tickets(), "tickets"),
            (k.expiry(), "qx"),
            (k.tentative(), "tent"),
            (k.holders(), "h"),
            (k.permits(), "n"),
            (k.count(), "count"),
        ];
        for (name, suffix) in rest {
            assert_eq!(name, format!("/lockbench/orders:{suffix}"));
        }
        assert_eq!(k.released_channel(), "/lockbench/orders:released");
        // The scripts build this name themselves (`lock .. ':w:' .. head`): keep them in step.
        assert_eq!(k.wake_channel("c1:7"), "/lockbench/orders:w:c1:7");
        assert!(RELEASE.contains("':released'") && HELPERS.contains("':w:'"));
        assert!(HERD_RELEASE.contains("':released'"));
    }

    #[test]
    fn ticket_modes_map_to_script_arguments() {
        assert_eq!(TicketMode::Propose.args(), ("propose", 0));
        assert_eq!(TicketMode::Tentative.args(), ("tentative", 0));
        assert_eq!(TicketMode::Final(42).args(), ("final", 42));
    }
}
