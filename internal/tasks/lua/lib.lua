-- lib.lua: helpers shared by every queue script. scripts.go loads this file
-- once as the top of a Redis function library and registers each script's
-- own text as one function of it, so each script stays one atomic FCALL.
--
-- Every queue script receives the same KEYS, all of one queue (one hash tag,
-- one cluster slot), in the order of queueKeys.all() in keys.go:
-- KEYS[1]  -> cd:{<queue>}:conf       HASH  queue settings
-- KEYS[2]  -> cd:{<queue>}:ready      ZSET  id -> rank
-- KEYS[3]  -> cd:{<queue>}:scheduled  ZSET  id -> due ms
-- KEYS[4]  -> cd:{<queue>}:reserved   ZSET  id -> deadline ms
-- KEYS[5]  -> cd:{<queue>}:completed  ZSET  id -> finished ms
-- KEYS[6]  -> cd:{<queue>}:dead       ZSET  id -> finished ms
-- KEYS[7]  -> cd:{<queue>}:canceled   ZSET  id -> finished ms
-- KEYS[8]  -> cd:{<queue>}:meta       HASH  id -> job metadata (MessagePack)
-- KEYS[9]  -> cd:{<queue>}:payload    HASH  id -> payload (JSON)
-- KEYS[10] -> cd:{<queue>}:result     HASH  id -> result (JSON)
-- KEYS[11] -> cd:{<queue>}:idem       HASH  idempotency key -> id
-- KEYS[12] -> cd:{<queue>}:skips      SET   "operator\nid"
-- KEYS[13] -> cd:{<queue>}:skipcount  HASH  operator -> live skips
-- KEYS[14] -> cd:{<queue>}:batches    HASH  batch id -> batch record (JSON)
-- KEYS[15] -> cd:{<queue>}:batchindex ZSET  batch id -> created ms
-- KEYS[16] -> cd:{<queue>}:batchdone  ZSET  batch id -> finished ms
-- KEYS[17] -> cd:{<queue>}:parked     ZSET  "batch|rank|id", score 0: ready
--                                           jobs of capped batches waiting
--                                           for a free slot, in lex order
-- KEYS[18] -> cd:{<queue>}:members    ZSET  "batch|id", score 0: every job
--                                           of every batch
-- Scripts answer a table whose first element is a status code; codes other
-- than "ok" are turned into Go errors in one place (scripts.go).

-- K and INDEX name the keys of the call under way, BATCHES caches the batch
-- records it loaded: begin sets them anew for every call.
local K, INDEX, BATCHES = {}, {}, {}

local function begin(keys)
  K.conf, K.meta, K.payload, K.result = keys[1], keys[8], keys[9], keys[10]
  K.idem, K.skips, K.skipcount = keys[11], keys[12], keys[13]
  K.batches, K.batchindex, K.batchdone = keys[14], keys[15], keys[16]
  K.parked, K.members = keys[17], keys[18]
  INDEX.ready, INDEX.scheduled, INDEX.reserved = keys[2], keys[3], keys[4]
  INDEX.completed, INDEX.dead, INDEX.canceled = keys[5], keys[6], keys[7]
  BATCHES = {}
end

-- int formats an integral number (every score and count here is one) as a
-- command argument. A plain Lua number would be printed with %.17g, which
-- costs more than many a whole command.
local function int(n)
  return string.format('%d', n)
end

-- NOW is the script's one idea of the current time in ms, set by clock.
local NOW

-- clock returns now in ms: the caller's explicit value (tests), else Redis
-- TIME. Every script that changes a job's state calls it first.
local function clock(arg)
  if arg ~= nil and arg ~= '' then
    NOW = tonumber(arg)
  else
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end

-- settings returns the named settings of the queue as numbers, or nil if
-- the queue does not exist (every queue has all of them).
local function settings(...)
  local names = {...}
  local raw = redis.call('HMGET', K.conf, ...)
  if not raw[1] then return nil end
  local c = {}
  for i, name in ipairs(names) do c[name] = tonumber(raw[i]) end
  return c
end

-- Job metadata is stored as a run of MessagePack values, one per field in
-- the order below, nil where a field is absent: no field names to keep in
-- memory, and cmsgpack builds and walks no table of its own while packing
-- and unpacking (both happen on every change of state). run_at is left out when it equals
-- created_at. internal/tasks/msgpack.go reads the same order.
local function load(id)
  local raw = redis.call('HGET', K.meta, id)
  if not raw then return nil end
  local state, title, priority, attempts, max_attempts, lease_seconds,
    created_at, run_at, rank, reserved_by, reserved_at, deadline, token,
    extensions, finished_at, last_error, idempotency_key, skipped_by,
    batch = cmsgpack.unpack(raw)
  return {
    state = state, title = title, priority = priority, attempts = attempts,
    max_attempts = max_attempts, lease_seconds = lease_seconds,
    created_at = created_at, run_at = run_at or created_at, rank = rank,
    reserved_by = reserved_by, reserved_at = reserved_at, deadline = deadline,
    token = token, extensions = extensions, finished_at = finished_at,
    last_error = last_error, idempotency_key = idempotency_key,
    skipped_by = skipped_by, batch = batch,
  }
end

-- store saves the job's metadata and returns it as stored.
local function store(id, m)
  local run_at = m.run_at
  if run_at == m.created_at then run_at = nil end
  local raw = cmsgpack.pack(m.state, m.title, m.priority, m.attempts,
    m.max_attempts, m.lease_seconds, m.created_at, run_at, m.rank,
    m.reserved_by, m.reserved_at, m.deadline, m.token, m.extensions,
    m.finished_at, m.last_error, m.idempotency_key, m.skipped_by, m.batch)
  redis.call('HSET', K.meta, id, raw)
  return raw
end

-- Batches. Each job of a batch counts in one of its batch's counters
-- (BUCKET names which, per state). A batch with max_concurrent > 0 keeps its
-- ready jobs out of the claim line, in parked, and admits the best of them
-- into ready only while reserved + admitted < max_concurrent. A slot is
-- nothing but those two counters, changed by the same script that moves the
-- job, so no crash or race can leak or double one; and claim never meets a
-- job it may not take, so it never scans past a full batch.
local BUCKET = {
  ready = 'ready', scheduled = 'ready', reserved = 'reserved',
  completed = 'completed', dead = 'dead', canceled = 'canceled',
}

-- batch returns the record of batch bid (nil for no batch, or one purged).
local function batch(bid)
  if not bid then return nil end
  local b = BATCHES[bid]
  if b == nil then
    local raw = redis.call('HGET', K.batches, bid)
    if not raw then return nil end
    b = cjson.decode(raw)
    BATCHES[bid] = b
  end
  return b
end

-- parked_member names a parked job so that a batch's jobs sort together,
-- best rank first (ranks are integers above -10^14: offset, zero-padded).
local function parked_member(id, m)
  return m.batch .. '|' .. string.format('%017.0f', m.rank + 1e14) .. '|' .. id
end

-- fill admits a capped batch's best parked jobs into the claim line while
-- it has free slots. A canceled batch admits nothing more.
local function fill(bid, b)
  if b.max_concurrent == 0 or b.state == 'canceled' then return end
  while b.reserved + b.admitted < b.max_concurrent do
    local head = redis.call('ZRANGEBYLEX', K.parked, '[' .. bid .. '|', '(' .. bid .. '}', 'LIMIT', '0', '1')[1]
    if not head then return end
    local rank, id = string.match(head, '^[^|]+|(%d+)|(.+)$')
    redis.call('ZREM', K.parked, head)
    redis.call('ZADD', INDEX.ready, int(tonumber(rank) - 1e14), id)
    b.admitted = b.admitted + 1
  end
end

-- settle admits jobs into free slots, finishes a sealed batch whose jobs
-- have all ended (or reopens one whose dead job was requeued), and saves it.
local function settle(bid, b)
  fill(bid, b)
  if b.state ~= 'open' then
    local ended = b.completed + b.dead + b.canceled == b.total
    if ended and not b.finished_at then
      b.finished_at = NOW
      if b.state ~= 'canceled' then
        b.state = (b.dead + b.canceled > 0) and 'completed_with_failures' or 'completed'
      end
      redis.call('ZADD', K.batchdone, int(NOW), bid)
    elseif not ended and b.finished_at then
      b.finished_at = nil
      b.state = 'sealed'
      redis.call('ZREM', K.batchdone, bid)
    end
  end
  redis.call('HSET', K.batches, bid, cjson.encode(b))
end

-- unfile takes the job out of the index of its state.
local function unfile(id, m, b)
  if m.state == 'ready' and b then
    if redis.call('ZREM', INDEX.ready, id) == 1 then
      b.admitted = b.admitted - 1
    else
      redis.call('ZREM', K.parked, parked_member(id, m))
    end
  else
    redis.call('ZREM', INDEX[m.state], id)
  end
end

-- file puts the job in the index of its state, at score. A ready job of a
-- capped batch goes to parked; settle admits it when a slot is free.
local function file(id, m, score, b)
  if m.state == 'ready' and b and b.max_concurrent > 0 then
    redis.call('ZADD', K.parked, '0', parked_member(id, m))
  else
    redis.call('ZADD', INDEX[m.state], int(score), id)
    if m.state == 'ready' and b then b.admitted = b.admitted + 1 end
  end
end

-- move takes the job out of the index of its state and files it under a
-- new one, keeping its batch's counters and slots.
local function move(id, m, state, score)
  local b = batch(m.batch)
  unfile(id, m, b)
  if b then b[BUCKET[m.state]] = b[BUCKET[m.state]] - 1 end
  m.state = state
  file(id, m, score, b)
  if b then
    b[BUCKET[state]] = b[BUCKET[state]] + 1
    settle(m.batch, b)
  end
end

local function end_reservation(m)
  m.reserved_by, m.reserved_at, m.deadline, m.token, m.extensions = nil, nil, nil, nil, nil
end

-- forget_skips drops the skip records of a job that will never be offered again.
local function forget_skips(id, m)
  if not m.skipped_by then return end
  for _, op in ipairs(m.skipped_by) do
    redis.call('SREM', K.skips, op .. '\n' .. id)
    if redis.call('HINCRBY', K.skipcount, op, '-1') <= 0 then
      redis.call('HDEL', K.skipcount, op)
    end
  end
  m.skipped_by = nil
end

-- finish files a job under a terminal state: completed, dead or canceled.
local function finish(id, m, state, now)
  forget_skips(id, m)
  end_reservation(m)
  m.finished_at = now
  move(id, m, state, now)
end

-- back_in_line returns a job to ready at the rank it had, so it keeps its
-- place; in a canceled batch it is canceled instead.
local function back_in_line(id, m)
  local b = batch(m.batch)
  if b and b.state == 'canceled' then
    finish(id, m, 'canceled', NOW)
  else
    end_reservation(m)
    move(id, m, 'ready', m.rank)
  end
end

-- spend_attempt counts a failed attempt: back in line while attempts are
-- left, dead once they are used up.
local function spend_attempt(id, m, now, reason)
  m.attempts = m.attempts + 1
  m.last_error = reason
  if m.attempts >= m.max_attempts then
    finish(id, m, 'dead', now)
  else
    back_in_line(id, m)
  end
end

-- held returns the job if token is the live reservation's token and its
-- deadline has not passed; otherwise nil and the status code to answer.
local function held(id, token, now)
  local m = load(id)
  if not m then return nil, 'not_found' end
  if m.state ~= 'reserved' or m.token ~= token or m.deadline <= now then
    return nil, 'reservation_lost'
  end
  return m
end

-- reclaim ends at most limit reservations whose deadline has passed: each
-- job goes back in line with one attempt spent, or dead. It returns whether
-- more expired reservations remain, and {id, former holder, new state,
-- batch or ""} per job.
local function reclaim(now, limit)
  local expired = redis.call('ZRANGEBYSCORE', INDEX.reserved, '-inf', int(now), 'LIMIT', '0', int(limit + 1))
  local moved = {}
  for i = 1, math.min(#expired, limit) do
    local id = expired[i]
    local m = load(id)
    local holder = m.reserved_by
    spend_attempt(id, m, now, 'reservation expired (held by ' .. holder .. ')')
    store(id, m)
    moved[i] = {id, holder, m.state, m.batch or ''}
  end
  return #expired > limit, moved
end

-- promote moves at most limit due scheduled jobs to ready; true if more are due.
local function promote(now, limit)
  local due = redis.call('ZRANGEBYSCORE', INDEX.scheduled, '-inf', int(now), 'LIMIT', '0', int(limit + 1))
  local promoted = {}
  for i = 1, math.min(#due, limit) do
    local id = due[i]
    local m = load(id)
    back_in_line(id, m)
    store(id, m)
    promoted[i] = id
  end
  return #due > limit, promoted
end

-- reply answers a job: {"ok", id, stored metadata, payload, extra values...}.
local function reply(id, raw, ...)
  return {'ok', id, raw, redis.call('HGET', K.payload, id), ...}
end
