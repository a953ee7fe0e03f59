// Every Lua script of the Redis service, in one place. Internal.
//
// Each state change is one script, run atomically by the server, reading the server's TIME (all
// times are microseconds since the Unix epoch on the server's clock). Lua numbers are doubles:
// every integer stays at or below 2^53 - 1 (times in µs are about 2^51), is written with "%.0f",
// never tostring, and every number read from a key is checked (int()) before it is compared or
// computed with. A fence counter at 2^53 - 1 draws no more fences: the scripts refuse, never repeat.
//
// A key that holds no readable lease is refused with an error reply "DBLOCK ..." (a UsageError),
// before the script writes anything but the pruning of expired entries; the listing shows such a
// lease as unreadable and force-release removes it. A script never stops in a Lua error.
//
// Keys of a lock NAME under prefix P (keys.h builds them, the scripts get them as KEYS; shown for
// a name without '}', keys.h has the rest):
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

// Shared by every script: clock, numbers, the lease's state, the waiters' line, the hand-on.
inline constexpr std::string_view kPrelude = R"LUA(
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function str(n) return string.format('%.0f', n) end
-- The largest integer a Lua number (a double) holds exactly: the last fence dblock issues.
local kMaxInt = 9007199254740991
-- `v` as a number when it is a decimal integer from 0 to kMaxInt, else nil (missing, a word, a
-- sign, a fraction, or more than a double holds exactly). Every number read from a key goes
-- through it before it is compared or computed with.
local function int(v)
  if type(v) ~= 'string' or not string.find(v, '^%d+$') then return nil end
  v = (string.gsub(v, '^0+(%d)', '%1'))
  if #v > 16 or (#v == 16 and v > '9007199254740991') then return nil end
  return tonumber(v)
end
-- Ends the script with a DBLOCK error. Only before the script wrote anything but pruning.
local function refuse(text) error(redis.error_reply('DBLOCK ' .. text)) end
-- A reader's field "exp|fence|acq|ren|holder": its numbers and holder, or nil when malformed.
local function reader_fields(v)
  local exp, fence, acq, ren, holder = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  exp, fence, acq, ren = int(exp), int(fence), int(acq), int(ren)
  if not (exp and fence and acq and ren) then return nil end
  return exp, fence, acq, ren, holder
end
-- What the lock key `key` holds: 'free', 'x' or 's' (a live dblock lease; with `prune`, expired
-- holders are deleted on the way), 'foreign' (another client's string), 'alien' (a key that is no
-- lock) or 'bad' (a dblock lease, by its mode, whose fields cannot be read). Second, the lease as
-- read and checked: 'x' {owner, holder, fence, acq, exp, ren}; 's' {fence, permits, live (the
-- number of live readers), readers (digest -> {exp, fence, acq, ren, holder}, live ones only)};
-- 'bad' {mode, why}. Nothing is pruned from a 'bad' lease.
local function state(key, now, prune)
  local t = redis.call('TYPE', key)['ok']
  if t == 'none' then return 'free' end
  if t == 'string' then return 'foreign' end
  if t ~= 'hash' then return 'alien' end
  local f = redis.call('HMGET', key, 'mode', 'exp', 'fence', 'owner', 'holder', 'acq', 'ren', 'permits')
  local mode = f[1]
  if mode == 'x' then
    local exp = int(f[2])
    if not exp then return 'bad', {mode = 'x', why = "field 'exp' is not a time in microseconds"} end
    if exp <= now then
      if prune then redis.call('DEL', key) end
      return 'free'
    end
    local l = {owner = f[4], holder = f[5], fence = int(f[3]), acq = int(f[6]), exp = exp, ren = int(f[7])}
    for _, name in ipairs({'fence', 'acq', 'ren'}) do
      if not l[name] then return 'bad', {mode = 'x', why = "field '" .. name .. "' is not a number from 0 to 2^53 - 1"} end
    end
    if type(l.owner) ~= 'string' then return 'bad', {mode = 'x', why = "field 'owner' is missing"} end
    if type(l.holder) ~= 'string' then return 'bad', {mode = 'x', why = "field 'holder' is missing"} end
    return 'x', l
  elseif mode == 's' then
    local l = {fence = int(f[3]), permits = 0, live = 0, readers = {}}
    if not l.fence then return 'bad', {mode = 's', why = "field 'fence' is not a number from 0 to 2^53 - 1"} end
    if f[8] then
      l.permits = int(f[8])
      if not l.permits then return 'bad', {mode = 's', why = "field 'permits' is not a number"} end
    end
    local all, expired = redis.call('HGETALL', key), {}
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 2) == 'r:' then
        local exp, fence, acq, ren, holder = reader_fields(all[i + 1])
        if not exp then
          return 'bad', {mode = 's', why = "reader field '" .. string.sub(all[i], 1, 50) .. "' is not exp|fence|acq|ren|holder"}
        end
        if exp > now then
          l.readers[string.sub(all[i], 3)] = {exp, fence, acq, ren, holder}
          l.live = l.live + 1
        else
          expired[#expired + 1] = all[i]
        end
      end
    end
    if l.live > 0 then
      if prune then
        for _, field in ipairs(expired) do redis.call('HDEL', key, field) end
      end
      return 's', l
    end
    if prune then redis.call('DEL', key) end
    return 'free'
  end
  return 'alien'
end
-- Latest expiry (µs) of a live lease `l` in state `st`.
local function latest_expiry(st, l)
  if st == 'x' then return l.exp end
  local latest = 0
  for _, r in pairs(l.readers) do latest = math.max(latest, r[1]) end
  return latest
end
-- The holder's remaining time in ms: 0 when free, -1 when unknown (a string without PX, a lease
-- that cannot be read).
local function remaining_ms(key, st, l, now)
  if st == 'free' then return 0 end
  if st == 'bad' then return -1 end
  if st == 'foreign' or st == 'alien' then
    local pttl = redis.call('PTTL', key)
    if pttl < 0 then return -1 end
    return pttl
  end
  return math.max(0, math.floor((latest_expiry(st, l) - now) / 1000))
end
local function alien(key)
  return redis.error_reply('DBLOCK the key ' .. key .. ' holds a ' .. redis.call('TYPE', key)['ok'] ..
                           ' that is not a lock (another application uses this name)')
end
-- The refusal for a lease `state` found 'bad'.
local function unreadable(key, l)
  refuse('the key ' .. key .. ' holds a dblock lease that cannot be read (' .. l.why ..
         '); nothing was changed; `dblock release --force` removes it')
end
-- The next number of the counter `fence_key` (fences, and the waiters' tickets), not yet written:
-- one more than it holds, floored at the server's clock in µs (numbers keep growing after a
-- restart that lost the counter). nil and the reason when the counter holds no number, or one at
-- or past kMaxInt: past it a Lua number is not exact and fences would repeat, so dblock stops.
local function peek_number(fence_key, now)
  local v = redis.pcall('GET', fence_key)
  if type(v) == 'table' and v.err then return nil, 'the fence counter ' .. fence_key .. ' is not a string' end
  local f = 0
  if v then
    f = int(v)
    if not f and not string.find(v, '^%d+$') then
      return nil, 'the fence counter ' .. fence_key .. " holds '" .. string.sub(v, 1, 24) ..
                  "', not a number from 0 to 9007199254740991 (2^53 - 1)"
    end
    if not f or f >= kMaxInt then
      return nil, 'the fence counter ' .. fence_key .. ' holds ' .. string.sub(v, 1, 24) .. ', at or past ' ..
                  '9007199254740991 (2^53 - 1), the last fence dblock issues: no more fences for this name ' ..
                  '(a fence must never repeat)'
    end
  end
  return math.max(f + 1, now)
end
-- Draws the counter's next number (peek_number, then written). nil and the reason as peek_number.
local function next_number(fence_key, now)
  local f, why = peek_number(fence_key, now)
  if f then redis.call('SET', fence_key, str(f)) end
  return f, why
end
-- Keeps the lease key until its latest holder's expiry (ms, rounded up).
local function expire_at(key, exp_us, now)
  local want = math.ceil(exp_us / 1000) + 1
  local pttl = redis.call('PTTL', key)
  local now_ms = math.floor(now / 1000)
  if pttl < 0 or now_ms + pttl < want then redis.call('PEXPIREAT', key, str(want)) end
end
local function waiter_fields(v)
  local untl, mode, ttl, holder = string.match(v, '^(%d+)|([xs])|(%d+)|(.*)$')
  untl, ttl = int(untl), int(ttl)
  if not (untl and ttl) then return nil end
  return untl, mode, ttl, holder
end
-- The waiters in ticket order: {digest, ticket, until, mode, ttl, holder} of the live ones; with
-- `prune`, expired (or unreadable) entries are removed on the way. nil and the reason when the
-- line's keys are of another type.
local function live_waiters(q, qi, now, prune)
  local entries = redis.pcall('ZRANGE', q, 0, -1, 'WITHSCORES')
  if entries.err then return nil, 'the line ' .. q .. ' is not a sorted set' end
  if #entries == 0 then return {} end
  local digests = {}
  for i = 1, #entries, 2 do digests[#digests + 1] = entries[i] end
  local infos = {}
  for at = 1, #digests, 500 do
    local part = redis.pcall('HMGET', qi, unpack(digests, at, math.min(at + 499, #digests)))
    if part.err then return nil, 'the line ' .. qi .. ' is not a hash' end
    for _, v in ipairs(part) do infos[#infos + 1] = v end
  end
  local out = {}
  for i, d in ipairs(digests) do
    local v, ticket = infos[i], tonumber(entries[2 * i])
    local untl, mode, ttl, holder
    if v then untl, mode, ttl, holder = waiter_fields(v) end
    if untl and untl > now then
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
-- permits, returned fourth), else 'held'. Also returns the state, the live waiters (unless
-- 'mine') and, fifth, the lease as state() read it. Prunes expired holders and waiters; refuses
-- (DBLOCK) a lease or a line that cannot be read.
local function claim(K1, q, qi, d, mode, ticket, now, permits)
  local st, l = state(K1, now, true)
  if st == 'alien' then return 'held', st, {} end
  if st == 'bad' then unreadable(K1, l) end
  if mode == 'x' and st == 'x' and l.owner == d then return 'mine', st, {}, nil, l end
  if mode == 's' and st == 's' and l.readers[d] then return 'mine', st, {}, nil, l end
  local joinable = st == 'free'
  if mode == 's' and st == 's' then
    if l.permits ~= permits then return 'mismatch', st, {}, l.permits, l end
    joinable = permits == 0 or l.live < permits  -- `d` is not among them: 'mine' returned above
  end
  local waiters, why = live_waiters(q, qi, now, true)
  if not waiters then refuse(why) end
  if joinable and ahead_of(waiters, d, ticket) == 0 then return 'free', st, waiters, nil, l end
  return 'held', st, waiters, nil, l
end
-- Gives `d` the lease `claim` found 'mine' (`l`; extended to now + ttl) or 'free' (a new fence,
-- `fence` when the caller drew it already; a reader records `permits`). Returns fence, exp.
-- Refuses (DBLOCK) when no fence can be drawn, before it writes.
local function take(K1, K2, q, qi, d, holder, ttl, mode, how, waiters, now, permits, l, fence)
  local exp = now + ttl
  if how == 'mine' then
    if mode == 'x' then
      redis.call('HSET', K1, 'exp', str(exp))
      fence = l.fence
    else
      local r = l.readers[d]
      redis.call('HSET', K1, 'r:' .. d, str(exp) .. '|' .. str(r[2]) .. '|' .. str(r[3]) .. '|' .. str(r[4]) .. '|' .. r[5])
      fence = r[2]
    end
    expire_at(K1, exp, now)
    leave_line(q, qi, d)
    return fence, exp
  end
  if fence then
    redis.call('SET', K2, str(fence))
  else
    local why
    fence, why = next_number(K2, now)
    if not fence then refuse(why) end
  end
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
-- After the lease became free: grants it to the first live exclusive waiter for the TTL it asked
-- for, on the server's clock from now, and publishes the grant; or names a first shared waiter
-- (it attempts itself). A publish is only a hint. Never refuses (it runs after the caller wrote):
-- a line that cannot be read hands on nothing; a counter that cannot draw a fence names the
-- waiter instead of granting, and its own attempt meets the refusal.
local function hand_on(K1, K2, q, qi, now, channel, name)
  local waiters = live_waiters(q, qi, now, true)
  local first = waiters and waiters[1]
  if not first then return false end
  local fence = first[4] == 'x' and next_number(K2, now)
  if not fence then
    redis.call('PUBLISH', channel, name .. '\31' .. str(first[2]))
    return true
  end
  local exp = now + first[5]
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
local how, st, waiters, held, l = claim(KEYS[1], KEYS[3], KEYS[4], d, mode, ticket, now, permits)
if st == 'alien' then return alien(KEYS[1]) end
if how == 'mismatch' then return {2, held} end
if how ~= 'held' then
  local fence, exp = take(KEYS[1], KEYS[2], KEYS[3], KEYS[4], d, holder, ttl, mode, how, waiters, now, permits, l)
  return {1, fence, exp}
end
local remaining = remaining_ms(KEYS[1], st, l, now)
if ARGV[6] ~= '1' then return {0, remaining} end
local mine = redis.call('ZSCORE', KEYS[3], d)
if mine then
  ticket = tonumber(mine)
else
  local why
  ticket, why = next_number(KEYS[2], now)
  if not ticket then refuse(why) end
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
// mode with nobody live in its line (or already the same secret's), and every fence it needs can
// be drawn. Returns {1, fence1, exp1, fence2, exp2, ...} in KEYS order, or {0, i,
// holder_remaining_ms} for the first name i refused, or {2, i, held} when name i's live readers
// hold `held` permits (kAcquire). Never a semaphore.
inline constexpr std::string_view kAcquireAll = R"LUA(
local now = now_us()
local holder, n, claims = ARGV[1], #KEYS / 4, {}
for i = 1, n do
  local k, a = (i - 1) * 4, 1 + (i - 1) * 3
  local d, mode = redis.sha1hex(ARGV[a + 1]), ARGV[a + 3]
  local how, st, waiters, held, l = claim(KEYS[k + 1], KEYS[k + 3], KEYS[k + 4], d, mode, 0, now, 0)
  if st == 'alien' then return alien(KEYS[k + 1]) end
  if how == 'mismatch' then return {2, i, held} end
  if how == 'held' then return {0, i, remaining_ms(KEYS[k + 1], st, l, now)} end
  local fence, why
  if how == 'free' then
    fence, why = peek_number(KEYS[k + 2], now)
    if not fence then refuse(why) end
  end
  claims[i] = {d, tonumber(ARGV[a + 2]), mode, how, waiters, l, fence}
end
local out = {1}
for i = 1, n do
  local k, c = (i - 1) * 4, claims[i]
  local fence, exp = take(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], c[1], holder, c[2], c[3], c[4], c[5], now, 0,
                          c[6], c[7])
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
local st, l = state(KEYS[1], now, false)
if st == 'bad' then unreadable(KEYS[1], l) end
local fence = 0
if ARGV[3] == 'x' then
  if st ~= 'x' or l.owner ~= d then return {0} end
  redis.call('HSET', KEYS[1], 'exp', str(exp), 'ren', str(l.ren + 1))
  fence = l.fence
else
  if st ~= 's' then return {0} end
  local r = l.readers[d]
  if not r then return {0} end
  fence = r[2]
  redis.call('HSET', KEYS[1], 'r:' .. d, str(exp) .. '|' .. str(fence) .. '|' .. str(r[3]) .. '|' .. str(r[4] + 1) .. '|' .. r[5])
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
local st, l = state(KEYS[1], now, false)
if st == 'bad' then unreadable(KEYS[1], l) end
local released = false
local hold = tonumber(ARGV[7] or '0')
if ARGV[2] == 'x' and st == 'x' and l.owner == d then
  local until_us = l.acq + hold
  if hold > 0 and until_us > now then
    redis.call('HSET', KEYS[1], 'owner', '', 'exp', str(until_us))
    redis.call('PEXPIREAT', KEYS[1], str(math.ceil(until_us / 1000) + 1))
    if ARGV[5] == '1' then redis.call('SET', KEYS[5], '1', 'PX', 30000) end
    leave_line(KEYS[3], KEYS[4], d)
    return 1
  end
  redis.call('DEL', KEYS[1])
  released = true
elseif ARGV[2] == 's' and st == 's' and l.readers[d] then
  redis.call('HDEL', KEYS[1], 'r:' .. d)
  released = true
  if l.live == 1 then redis.call('DEL', KEYS[1]) end  -- no live reader is left
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
// client's string, and a dblock lease that cannot be read, included), bumps the fence, records
// the eviction. Of another client's string the record keeps only its length (it may be that
// client's secret, or an application's data under a mistaken prefix). Returns 1, or 0 when free.
inline constexpr std::string_view kForceRelease = R"LUA(
local now = now_us()
local st, l = state(KEYS[1], now, true)
if st == 'free' then return 0 end
if st == 'alien' then return alien(KEYS[1]) end
local audit = redis.call('TYPE', KEYS[5])['ok']
if audit ~= 'none' and audit ~= 'stream' then refuse('the force-release record ' .. KEYS[5] .. ' is a ' .. audit .. ', not a stream') end
local fence, why = peek_number(KEYS[2], now)
if not fence then refuse(why) end
local evicted, mode, old = '', 'x', 0
if st == 'foreign' then
  evicted = "(another client's lock: a string of " .. #redis.call('GET', KEYS[1]) .. ' bytes)'
elseif st == 'bad' then
  mode = l.mode
  evicted = '(an unreadable lease: ' .. l.why .. ')'
  old = int(redis.call('HGET', KEYS[1], 'fence')) or 0
elseif st == 'x' then
  evicted = l.holder
  old = l.fence
else
  mode = 's'
  old = l.fence
  local holders = {}
  for _, r in pairs(l.readers) do holders[#holders + 1] = r[5] end
  table.sort(holders)
  evicted = table.concat(holders, ',')
end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], str(fence))
redis.call('XADD', KEYS[5], 'MAXLEN', '~', '10000', '*', 'name', ARGV[2], 'at', str(now), 'by', ARGV[3],
           'evicted', evicted, 'mode', mode, 'old', str(old), 'new', str(fence))
hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now, ARGV[1], ARGV[2])
return 1
)LUA";

// KEYS: K1 K3 K4 of each lock to describe, in turn. Returns {now_us, then per lock: kind, mode,
// holder, fence, acq, exp, ren, holders, permits, waiters} where kind is 0 (free), 1 (a dblock
// lease), 2 (another client's string), 3 (a key that is no lock) or 4 (a dblock lease that cannot
// be read: holder says why, the numbers are 0); times of kind 2 are from its PX (exp 0: none);
// waiters are the live entries of its line (-1: the line cannot be read). Never refuses.
inline constexpr std::string_view kDescribe = R"LUA(
local now = now_us()
local out = {str(now)}
for i = 1, #KEYS, 3 do
  local key = KEYS[i]
  local st, l = state(key, now, false)
  local kind, mode, holder, fence, acq, exp, ren, holders, permits = 0, 'x', '', 0, 0, 0, 0, 0, 0
  if st == 'x' then
    kind, holders = 1, 1
    holder, fence, acq, exp, ren = l.holder, l.fence, l.acq, l.exp, l.ren
  elseif st == 's' then
    kind, mode, fence, permits = 1, 's', l.fence, l.permits
    local names = {}
    for _, r in pairs(l.readers) do
      names[#names + 1] = r[5]
      exp = math.max(exp, r[1])
      if acq == 0 or r[3] < acq then acq = r[3] end
      ren = ren + r[4]
    end
    table.sort(names)
    holder, holders = table.concat(names, ','), #names
  elseif st == 'bad' then
    kind, mode, holder = 4, l.mode, l.why
  elseif st == 'foreign' or st == 'alien' then
    kind, holders = (st == 'foreign') and 2 or 3, 1
    local pttl = redis.call('PTTL', key)
    if pttl >= 0 then exp = now + pttl * 1000 end
  end
  local line = live_waiters(KEYS[i + 1], KEYS[i + 2], now, false)
  local waiters = line and #line or -1
  for _, v in ipairs({kind, mode, holder, str(fence), str(acq), str(exp), str(ren), holders, permits, waiters}) do
    out[#out + 1] = v
  end
end
return out
)LUA";

// KEYS: K1 K3 K4. ARGV: secret, ticket. Read-only. Returns {waiters ahead, holder remaining ms}
// (0 when free or when this secret holds it: a release granted it; -1 when unknown). A lease or a
// line that cannot be read answers {0, -1}: the waiter's next attempt meets the refusal.
inline constexpr std::string_view kPosition = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local st, l = state(KEYS[1], now, false)
local remaining = remaining_ms(KEYS[1], st, l, now)
if st == 'x' and l.owner == d then remaining = 0 end
local waiters = live_waiters(KEYS[2], KEYS[3], now, false)
if not waiters then return {0, -1} end
return {ahead_of(waiters, d, tonumber(ARGV[2])), remaining}
)LUA";

// KEYS: K1 K3 K4. ARGV: secret. Leaves the line; returns 1 when this secret holds the lease
// exclusively (a release granted it meanwhile), else 0.
inline constexpr std::string_view kLeave = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local st, l = state(KEYS[1], now, false)
leave_line(KEYS[2], KEYS[3], d)
if st == 'x' and l.owner == d then return 1 end
return 0
)LUA";

// KEYS: K1. ARGV: secret. Read-only. Returns {fence, exp_us, left_us} when this secret holds the
// lease exclusively and live, else {}.
inline constexpr std::string_view kConfirm = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local st, l = state(KEYS[1], now, false)
if st ~= 'x' or l.owner ~= d then return {} end
return {l.fence, l.exp, l.exp - now}
)LUA";

// KEYS: K1 K2. ARGV: secret, fence. Redlock's second round: this secret's exclusive lease takes
// the fence chosen across the nodes, and the counter is raised to it, so that any later majority
// (which shares a node with this one) draws a greater fence. Returns 1, or 0 when not held.
// Refuses (DBLOCK) a fence or a counter that is not a number from 0 to 2^53 - 1.
inline constexpr std::string_view kRaiseFence = R"LUA(
local now = now_us()
local d = redis.sha1hex(ARGV[1])
local fence = int(ARGV[2])
if not fence then refuse("the fence '" .. string.sub(ARGV[2], 1, 24) .. "' is not a number from 0 to 2^53 - 1") end
local st, l = state(KEYS[1], now, false)
if st ~= 'x' or l.owner ~= d then return 0 end
local v = redis.pcall('GET', KEYS[2])
local counter = 0
if type(v) == 'table' and v.err then refuse('the fence counter ' .. KEYS[2] .. ' is not a string') end
if v then
  counter = int(v)
  if not counter then refuse('the fence counter ' .. KEYS[2] .. ' holds no number from 0 to 9007199254740991 (2^53 - 1)') end
end
redis.call('HSET', KEYS[1], 'fence', str(fence))
if counter < fence then redis.call('SET', KEYS[2], str(fence)) end
return 1
)LUA";

// The ACL check made at open (no prelude; writes nothing): every command the scripts and the
// service send, with a key of each kind and the release channel, through redis.acl_check_cmd
// (Redis >= 7.0). No KEYS (EVAL would check them itself and name none). ARGV: a lease, its fence
// counter, line, line details and release latch, the audit stream, the release channel, listen
// ("1": the subscriber's SUBSCRIBE and PING too), select ("1": SELECT, for a database other than
// 0). Returns 1, or an error NOPERM naming every command, key and channel the user may not use.
inline constexpr std::string_view kPermissions = R"LUA(
local lease, fence, q, qi, latch, audit, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local uses = {
  {'EVALSHA'}, {'EVAL'}, {'INFO'}, {'SCAN'}, {'TIME'},
  {'TYPE', lease}, {'HMGET', lease}, {'HGET', lease}, {'HGETALL', lease}, {'HSET', lease}, {'HDEL', lease},
  {'DEL', lease}, {'EXISTS', lease}, {'GET', lease}, {'PTTL', lease}, {'PEXPIREAT', lease},
  {'GET', fence}, {'SET', fence},
  {'ZRANGE', q}, {'ZADD', q}, {'ZREM', q}, {'ZSCORE', q}, {'PEXPIRE', q},
  {'HMGET', qi}, {'HSET', qi}, {'HDEL', qi}, {'PEXPIRE', qi},
  {'SET', latch}, {'EXISTS', latch},
  {'TYPE', audit}, {'XADD', audit}, {'XREVRANGE', audit},
  {'PUBLISH', channel, 'x'},
}
if ARGV[8] == '1' then
  uses[#uses + 1] = {'SUBSCRIBE', channel}
  uses[#uses + 1] = {'PING'}
end
if ARGV[9] == '1' then uses[#uses + 1] = {'SELECT'} end
local commands, keys, channels, seen = {}, {}, {}, {}
for _, u in ipairs(uses) do
  local name = u[1]
  if not redis.acl_check_cmd(name) then
    if not seen[name] then commands[#commands + 1] = name end
    seen[name] = true
  elseif #u > 1 and not redis.acl_check_cmd(unpack(u)) then
    local what = u[2] .. ' (' .. name .. ')'
    if name == 'PUBLISH' or name == 'SUBSCRIBE' then channels[#channels + 1] = what else keys[#keys + 1] = what end
  end
end
if #commands + #keys + #channels == 0 then return 1 end
local parts = {}
if #commands > 0 then parts[#parts + 1] = 'the commands ' .. table.concat(commands, ' ') end
if #keys > 0 then parts[#parts + 1] = 'the keys ' .. table.concat(keys, ', ') end
if #channels > 0 then parts[#parts + 1] = 'the channel ' .. table.concat(channels, ', ') end
return redis.error_reply('NOPERM dblock: the ACL user may not use ' .. table.concat(parts, '; ') ..
                         " (README's Redis section has the ACL line dblock needs)")
)LUA";

}  // namespace dblock::redis::scripts

#endif  // DBLOCK_SRC_BACKENDS_REDIS_SCRIPTS_H_
