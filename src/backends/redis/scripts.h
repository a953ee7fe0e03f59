// Every Lua script of the Redis service, in one place. Internal.
//
// Each state change is one script, run atomically by the server, reading the server's TIME (all
// times are microseconds since the Unix epoch on the server's clock). Lua numbers are doubles: every
// integer stays below 2^53 (times in µs are about 2^51) and is written with "%.0f", never tostring.
//
// Keys of a lock NAME under prefix P (keys.h builds them, the scripts get them as KEYS):
//   K1 P..NAME              the lease: a hash, or another client's string (a live holder until its PX)
//   K2 {P..NAME}:fence      fence counter, never deleted; also draws the waiters' tickets
//   K3 {P..NAME}:q          waiters: zset, member = owner digest, score = ticket
//   K4 {P..NAME}:qi         waiters' details: digest -> "until_us|mode|ttl_us|holder"
//   K5 {P..NAME}:latch:D    a release by the owner with digest D, kept 30 s (release only)
//   K6 {P}:audit            the force-release stream (force_release only)
// The lease hash: mode ("x" or "s"), fence, and for "x": owner (digest), holder, acq, exp, ren;
// for "s": one field "r:"..digest per reader = "exp|fence|acq|ren|holder", and "permits", the
// semaphore's N the readers were granted under ("0" or absent: plain readers).
// Owner secrets arrive as ARGV (16 raw bytes) and only their redis.sha1hex digest is stored.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_SCRIPTS_H_
#define DBLOCK_SRC_BACKENDS_REDIS_SCRIPTS_H_

#include <string_view>

namespace dblock::redis::scripts {

// Shared by every script: clock, number formatting, the lease's state, the waiters' line.
inline constexpr std::string_view kPrelude = R"LUA(
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function str(n) return string.format('%.0f', n) end
local function reader_fields(v)
  local exp, fence, acq, ren, holder = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  return tonumber(exp), tonumber(fence), tonumber(acq), tonumber(ren), holder
end
-- 'free', 'x', 's', 'foreign' (another client's string) or 'alien' (a key that is no lock);
-- for 's', the number of live readers second. With `prune`, expired holders are deleted on the way.
local function state(key, now, prune)
  local t = redis.call('TYPE', key)['ok']
  if t == 'none' then return 'free' end
  if t == 'string' then return 'foreign' end
  if t ~= 'hash' then return 'alien' end
  local mode = redis.call('HGET', key, 'mode')
  if mode == 'x' then
    if tonumber(redis.call('HGET', key, 'exp')) > now then return 'x' end
    if prune then redis.call('DEL', key) end
    return 'free'
  elseif mode == 's' then
    local all, live = redis.call('HGETALL', key), 0
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 2) == 'r:' then
        if reader_fields(all[i + 1]) > now then live = live + 1
        elseif prune then redis.call('HDEL', key, all[i]) end
      end
    end
    if live > 0 then return 's', live end
    if prune then redis.call('DEL', key) end
    return 'free'
  end
  return 'alien'
end
-- Latest expiry of the lease (µs), 0 when none is known.
local function latest_expiry(key, st)
  if st == 'x' then return tonumber(redis.call('HGET', key, 'exp')) end
  local latest = 0
  if st == 's' then
    local all = redis.call('HGETALL', key)
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 2) == 'r:' then latest = math.max(latest, (reader_fields(all[i + 1]))) end
    end
  end
  return latest
end
-- The holder's remaining time in ms: 0 when free, -1 when unknown (a string without PX).
local function remaining_ms(key, st, now)
  if st == 'free' then return 0 end
  if st == 'foreign' or st == 'alien' then
    local pttl = redis.call('PTTL', key)
    if pttl < 0 then return -1 end
    return pttl
  end
  return math.max(0, math.floor((latest_expiry(key, st) - now) / 1000))
end
local function alien(key)
  return redis.error_reply('DBLOCK the key ' .. key .. ' holds a ' .. redis.call('TYPE', key)['ok'] ..
                           ' that is not a lock (another application uses this name)')
end
local function next_number(fence_key, now)
  local f = redis.call('INCR', fence_key)
  if f < now then
    redis.call('SET', fence_key, str(now))
    f = now
  end
  return f
end
-- Keeps the lease key until its latest holder's expiry (ms, rounded up).
local function expire_at(key, exp_us, now)
  local want = math.ceil(exp_us / 1000) + 1
  local pttl = redis.call('PTTL', key)
  local now_ms = math.floor(now / 1000)
  if pttl < 0 or now_ms + pttl < want then redis.call('PEXPIREAT', key, str(want)) end
end
local function waiter_fields(v)
  local untl, mode, ttl, holder = string.match(v, '^(%d+)|(%a)|(%d+)|(.*)$')
  return tonumber(untl), mode, tonumber(ttl), holder
end
-- The waiters in ticket order: {digest, ticket, until, mode, ttl, holder} of the live ones; with
-- `prune`, expired entries are removed on the way.
local function live_waiters(q, qi, now, prune)
  local out, entries = {}, redis.call('ZRANGE', q, 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    local d, ticket = entries[i], tonumber(entries[i + 1])
    local v = redis.call('HGET', qi, d)
    local untl, mode, ttl, holder
    if v then untl, mode, ttl, holder = waiter_fields(v) end
    if v and untl > now then
      out[#out + 1] = {d, ticket, untl, mode, ttl, holder}
    elseif prune then
      redis.call('ZREM', q, d)
      redis.call('HDEL', qi, d)
    end
  end
  return out
end
-- Live waiters ahead of `d` (other digests; with ticket 0, every other one).
local function ahead_of(waiters, d, ticket)
  local n = 0
  for _, w in ipairs(waiters) do
    if w[1] ~= d and (ticket == 0 or w[2] < ticket) then n = n + 1 end
  end
  return n
end
local function leave_line(q, qi, d)
  redis.call('ZREM', q, d)
  redis.call('HDEL', qi, d)
end
-- What `d` asking for `mode` (with `permits`, 0: not a semaphore) finds: 'mine' (it holds the lease
-- so: an acquire extends it), 'free' (nothing holds it against `mode`, a semaphore has a permit
-- left, and nobody live is ahead of `ticket` in line), 'mismatch' (live readers hold other
-- permits, returned fourth), else 'held'. Also returns the state and, unless 'mine', the live
-- waiters. Prunes expired holders and waiters.
local function claim(K1, q, qi, d, mode, ticket, now, permits)
  local st, live = state(K1, now, true)
  if st == 'alien' then return 'held', st, {} end
  if mode == 'x' and st == 'x' and redis.call('HGET', K1, 'owner') == d then return 'mine', st, {} end
  if mode == 's' and st == 's' and redis.call('HGET', K1, 'r:' .. d) then return 'mine', st, {} end
  local joinable = st == 'free'
  if mode == 's' and st == 's' then
    local held = tonumber(redis.call('HGET', K1, 'permits') or '0')
    if held ~= permits then return 'mismatch', st, {}, held end
    joinable = permits == 0 or live < permits  -- `d` is not among them: 'mine' returned above
  end
  local waiters = live_waiters(q, qi, now, true)
  if joinable and ahead_of(waiters, d, ticket) == 0 then return 'free', st, waiters end
  return 'held', st, waiters
end
-- Gives `d` the lease `claim` found 'mine' (extended to now + ttl) or 'free' (a new fence; a
-- reader records `permits`). Returns fence, exp.
local function take(K1, K2, q, qi, d, holder, ttl, mode, how, waiters, now, permits)
  local exp = now + ttl
  if how == 'mine' then
    local fence
    if mode == 'x' then
      redis.call('HSET', K1, 'exp', str(exp))
      fence = tonumber(redis.call('HGET', K1, 'fence'))
    else
      local _, f, acq, ren, h = reader_fields(redis.call('HGET', K1, 'r:' .. d))
      redis.call('HSET', K1, 'r:' .. d, str(exp) .. '|' .. str(f) .. '|' .. str(acq) .. '|' .. str(ren) .. '|' .. h)
      fence = f
    end
    expire_at(K1, exp, now)
    leave_line(q, qi, d)
    return fence, exp
  end
  local fence = next_number(K2, now)
  if mode == 'x' then
    redis.call('HSET', K1, 'mode', 'x', 'owner', d, 'holder', holder, 'fence', str(fence),
               'acq', str(now), 'exp', str(exp), 'ren', '0')
  else
    redis.call('HSET', K1, 'mode', 's', 'fence', str(fence), 'permits', str(permits),
               'r:' .. d, str(exp) .. '|' .. str(fence) .. '|' .. str(now) .. '|0|' .. holder)
  end
  expire_at(K1, exp, now)
  if #waiters > 0 then leave_line(q, qi, d) end
  return fence, exp
end
-- After the lease became free: grants it to the first live exclusive waiter and publishes the
-- grant, or names a first shared waiter (it attempts itself). A publish is only a hint.
local function hand_on(K1, K2, q, qi, now, channel, name)
  local waiters = live_waiters(q, qi, now, true)
  local first = waiters[1]
  if not first then return false end
  if first[4] ~= 'x' then
    redis.call('PUBLISH', channel, name .. '\31' .. str(first[2]))
    return true
  end
  local fence = next_number(K2, now)
  local exp = math.min(first[3], now + first[5])
  redis.call('HSET', K1, 'mode', 'x', 'owner', first[1], 'holder', first[6], 'fence', str(fence),
             'acq', str(now), 'exp', str(exp), 'ren', '0')
  expire_at(K1, exp, now)
  leave_line(q, qi, first[1])
  redis.call('PUBLISH', channel, name .. '\31' .. str(first[2]) .. '\31' .. str(fence) .. '\31' ..
             str(exp - now) .. '\31' .. str(exp))
  return true
end
)LUA";

// KEYS: K1 K2 K3 K4. ARGV: secret, holder, ttl_us, mode ("x"/"s"), ticket (0: none), queue ("1":
// join or refresh the line when refused), hold_us (the line entry's life), permits (0: none).
// Returns {1, fence, exp_us} when acquired (or already held by this secret: extended), else
// {0, holder_remaining_ms} or, when queued, {0, holder_remaining_ms, ticket, position}; {2, held}
// when live readers hold `held` permits (0: plain readers) and ARGV asked for others.
inline constexpr std::string_view kAcquire = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local holder, ttl, mode, ticket, permits = ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[8] or '0')
local how, st, waiters, held = claim(KEYS[1], KEYS[3], KEYS[4], d, mode, ticket, now, permits)
if st == 'alien' then return alien(KEYS[1]) end
if how == 'mismatch' then return {2, held} end
if how ~= 'held' then
  local fence, exp = take(KEYS[1], KEYS[2], KEYS[3], KEYS[4], d, holder, ttl, mode, how, waiters, now, permits)
  return {1, fence, exp}
end
local remaining = remaining_ms(KEYS[1], st, now)
if ARGV[6] ~= '1' then return {0, remaining} end
local mine = redis.call('ZSCORE', KEYS[3], d)
if mine then
  ticket = tonumber(mine)
else
  ticket = next_number(KEYS[2], now)
  redis.call('ZADD', KEYS[3], str(ticket), d)
end
local hold = tonumber(ARGV[7])
redis.call('HSET', KEYS[4], d, str(now + hold) .. '|' .. mode .. '|' .. str(ttl) .. '|' .. holder)
local keep = math.ceil(hold / 1000) + 60000
redis.call('PEXPIRE', KEYS[3], keep)
redis.call('PEXPIRE', KEYS[4], keep)
return {0, remaining, ticket, ahead_of(waiters, d, ticket)}
)LUA";

// Several names at once, all or none. KEYS: K1 K2 K3 K4 of each name in turn. ARGV: holder, then
// secret, ttl_us, mode of each name in turn. Takes nothing unless every name is free for its
// mode with nobody live in its line (or already the same secret's). Returns {1, fence1, exp1,
// fence2, exp2, ...} in KEYS order, or {0, i, holder_remaining_ms} for the first name i refused,
// or {2, i, held} when name i's live readers hold `held` permits (kAcquire). Never a semaphore.
inline constexpr std::string_view kAcquireAll = R"LUA(
local now = now_us()
local holder, n, claims = ARGV[1], #KEYS / 4, {}
for i = 1, n do
  local k, a = (i - 1) * 4, 1 + (i - 1) * 3
  local d, mode = redis.sha1hex(ARGV[a + 1]), ARGV[a + 3]
  local how, st, waiters, held = claim(KEYS[k + 1], KEYS[k + 3], KEYS[k + 4], d, mode, 0, now, 0)
  if st == 'alien' then return alien(KEYS[k + 1]) end
  if how == 'mismatch' then return {2, i, held} end
  if how == 'held' then return {0, i, remaining_ms(KEYS[k + 1], st, now)} end
  claims[i] = {d, tonumber(ARGV[a + 2]), mode, how, waiters}
end
local out = {1}
for i = 1, n do
  local k, c = (i - 1) * 4, claims[i]
  local fence, exp = take(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], c[1], holder, c[2], c[3], c[4], c[5], now, 0)
  out[#out + 1] = fence
  out[#out + 1] = exp
end
return out
)LUA";

// KEYS: K1. ARGV: secret, ttl_us, mode. Returns {1, exp_us, fence} or {0}.
inline constexpr std::string_view kRenew = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local exp = now + tonumber(ARGV[2])
local st = state(KEYS[1], now, false)
local fence = 0
if ARGV[3] == 'x' then
  if st ~= 'x' or redis.call('HGET', KEYS[1], 'owner') ~= d then return {0} end
  redis.call('HSET', KEYS[1], 'exp', str(exp))
  redis.call('HINCRBY', KEYS[1], 'ren', 1)
  fence = tonumber(redis.call('HGET', KEYS[1], 'fence'))
else
  if st ~= 's' then return {0} end
  local mine = redis.call('HGET', KEYS[1], 'r:' .. d)
  if not mine then return {0} end
  local old, f, acq, ren, h = reader_fields(mine)
  if old <= now then return {0} end
  fence = f
  redis.call('HSET', KEYS[1], 'r:' .. d, str(exp) .. '|' .. str(fence) .. '|' .. str(acq) .. '|' .. str(ren + 1) .. '|' .. h)
end
expire_at(KEYS[1], exp, now)
return {1, exp, fence}
)LUA";

// KEYS: K1 K2 K3 K4 K5. ARGV: secret, mode, channel, name, latch ("1": record the release),
// announce ("1": publish the name when the release handed it to nobody, for waiters not in line),
// hold_us (a scheduled job's minimum hold, 0: none: while acq + hold_us is ahead, the lease is
// kept until then, disowned, and handed to nobody).
// Returns 1 released, 2 released by an earlier call (a retry after a lost reply), 0 not held.
inline constexpr std::string_view kRelease = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local st = state(KEYS[1], now, false)
local released = false
local hold = tonumber(ARGV[7] or '0')
if ARGV[2] == 'x' and st == 'x' and redis.call('HGET', KEYS[1], 'owner') == d then
  local until_us = tonumber(redis.call('HGET', KEYS[1], 'acq')) + hold
  if hold > 0 and until_us > now then
    redis.call('HSET', KEYS[1], 'owner', '', 'exp', str(until_us))
    redis.call('PEXPIREAT', KEYS[1], str(math.ceil(until_us / 1000) + 1))
    if ARGV[5] == '1' then redis.call('SET', KEYS[5], '1', 'PX', 30000) end
    leave_line(KEYS[3], KEYS[4], d)
    return 1
  end
  redis.call('DEL', KEYS[1])
  released = true
elseif ARGV[2] == 's' and st == 's' then
  local mine = redis.call('HGET', KEYS[1], 'r:' .. d)
  if mine and reader_fields(mine) > now then
    redis.call('HDEL', KEYS[1], 'r:' .. d)
    released = true
    state(KEYS[1], now, true)  -- deletes the hash when no live reader is left
  end
end
if not released then
  if redis.call('EXISTS', KEYS[5]) == 1 then return 2 end
  return 0
end
if ARGV[5] == '1' then redis.call('SET', KEYS[5], '1', 'PX', 30000) end
leave_line(KEYS[3], KEYS[4], d)
if redis.call('EXISTS', KEYS[1]) == 0 and not hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now, ARGV[3], ARGV[4]) and
   ARGV[6] == '1' then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
return 1
)LUA";

// KEYS: K1 K2 K3 K4 K6. ARGV: channel, name, by. Frees the name whoever holds it (another
// client's string included), bumps the fence, records the eviction. Returns 1, or 0 when free.
inline constexpr std::string_view kForceRelease = R"LUA(
local now = now_us()
local st = state(KEYS[1], now, true)
if st == 'free' then return 0 end
if st == 'alien' then return alien(KEYS[1]) end
local evicted, mode, old = '', 'x', 0
if st == 'foreign' then
  evicted = '(another client: ' .. string.sub(redis.call('GET', KEYS[1]), 1, 64) .. ')'
elseif st == 'x' then
  evicted = redis.call('HGET', KEYS[1], 'holder')
  old = tonumber(redis.call('HGET', KEYS[1], 'fence'))
else
  mode = 's'
  old = tonumber(redis.call('HGET', KEYS[1], 'fence'))
  local all, holders = redis.call('HGETALL', KEYS[1]), {}
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r:' then
      local _, _, _, _, h = reader_fields(all[i + 1])
      holders[#holders + 1] = h
    end
  end
  table.sort(holders)
  evicted = table.concat(holders, ',')
end
redis.call('DEL', KEYS[1])
local fence = next_number(KEYS[2], now)
redis.call('XADD', KEYS[5], 'MAXLEN', '~', '10000', '*', 'name', ARGV[2], 'at', str(now), 'by', ARGV[3],
           'evicted', evicted, 'mode', mode, 'old', str(old), 'new', str(fence))
hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now, ARGV[1], ARGV[2])
return 1
)LUA";

// KEYS: K1 K3 K4 of each lock to describe, in turn. Returns {now_us, then per lock: kind, mode,
// holder, fence, acq, exp, ren, holders, permits, waiters} where kind is 0 (free), 1 (a dblock
// lease), 2 (another client's string) or 3 (a key that is no lock); times of kind 2 are from its
// PX (exp 0: none); waiters are the live entries of its line.
inline constexpr std::string_view kDescribe = R"LUA(
local now = now_us()
local out = {str(now)}
for i = 1, #KEYS, 3 do
  local key = KEYS[i]
  local st = state(key, now, false)
  local kind, mode, holder, fence, acq, exp, ren, holders, permits = 0, 'x', '', 0, 0, 0, 0, 0, 0
  if st == 'x' then
    kind, holders = 1, 1
    holder = redis.call('HGET', key, 'holder')
    fence = tonumber(redis.call('HGET', key, 'fence'))
    acq = tonumber(redis.call('HGET', key, 'acq'))
    exp = tonumber(redis.call('HGET', key, 'exp'))
    ren = tonumber(redis.call('HGET', key, 'ren'))
  elseif st == 's' then
    kind, mode = 1, 's'
    fence = tonumber(redis.call('HGET', key, 'fence'))
    permits = tonumber(redis.call('HGET', key, 'permits') or '0')
    local all, names = redis.call('HGETALL', key), {}
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 2) == 'r:' then
        local e, _, a, r, h = reader_fields(all[i + 1])
        if e > now then
          names[#names + 1] = h
          exp = math.max(exp, e)
          if acq == 0 or a < acq then acq = a end
          ren = ren + r
        end
      end
    end
    table.sort(names)
    holder, holders = table.concat(names, ','), #names
  elseif st == 'foreign' or st == 'alien' then
    kind, holders = (st == 'foreign') and 2 or 3, 1
    local pttl = redis.call('PTTL', key)
    if pttl >= 0 then exp = now + pttl * 1000 end
  end
  local waiters = #live_waiters(KEYS[i + 1], KEYS[i + 2], now, false)
  for _, v in ipairs({kind, mode, holder, str(fence), str(acq), str(exp), str(ren), holders, permits, waiters}) do
    out[#out + 1] = v
  end
end
return out
)LUA";

// KEYS: K1 K3 K4. ARGV: secret, ticket. Read-only. Returns {waiters ahead, holder remaining ms}
// (0 when free or when this secret holds it: a release granted it).
inline constexpr std::string_view kPosition = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local st = state(KEYS[1], now, false)
local remaining = remaining_ms(KEYS[1], st, now)
if st == 'x' and redis.call('HGET', KEYS[1], 'owner') == d then remaining = 0 end
return {ahead_of(live_waiters(KEYS[2], KEYS[3], now, false), d, tonumber(ARGV[2])), remaining}
)LUA";

// KEYS: K1 K3 K4. ARGV: secret. Leaves the line; returns 1 when this secret holds the lease
// exclusively (a release granted it meanwhile), else 0.
inline constexpr std::string_view kLeave = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
leave_line(KEYS[2], KEYS[3], d)
if state(KEYS[1], now, false) == 'x' and redis.call('HGET', KEYS[1], 'owner') == d then return 1 end
return 0
)LUA";

// KEYS: K1. ARGV: secret. Read-only. Returns {fence, exp_us, left_us} when this secret holds the
// lease exclusively and live, else {}.
inline constexpr std::string_view kConfirm = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
if state(KEYS[1], now, false) ~= 'x' or redis.call('HGET', KEYS[1], 'owner') ~= d then return {} end
local exp = tonumber(redis.call('HGET', KEYS[1], 'exp'))
return {tonumber(redis.call('HGET', KEYS[1], 'fence')), exp, exp - now}
)LUA";

// KEYS: K1 K2. ARGV: secret, fence. Redlock's second round: this secret's exclusive lease takes
// the fence chosen across the nodes, and the counter is raised to it, so that any later majority
// (which shares a node with this one) draws a greater fence. Returns 1, or 0 when not held.
inline constexpr std::string_view kRaiseFence = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
if state(KEYS[1], now, false) ~= 'x' or redis.call('HGET', KEYS[1], 'owner') ~= d then return 0 end
local fence = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'fence', str(fence))
if tonumber(redis.call('GET', KEYS[2]) or '0') < fence then redis.call('SET', KEYS[2], str(fence)) end
return 1
)LUA";

}  // namespace dblock::redis::scripts

#endif  // DBLOCK_SRC_BACKENDS_REDIS_SCRIPTS_H_
