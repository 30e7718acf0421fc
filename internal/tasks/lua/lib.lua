-- lib.lua: helpers shared by every queue script. scripts.go puts this file in
-- front of each script's own text, so each script stays one atomic EVALSHA.
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
-- KEYS[8]  -> cd:{<queue>}:meta       HASH  id -> job metadata (JSON)
-- KEYS[9]  -> cd:{<queue>}:payload    HASH  id -> payload (JSON)
-- KEYS[10] -> cd:{<queue>}:result     HASH  id -> result (JSON)
-- KEYS[11] -> cd:{<queue>}:idem       HASH  idempotency key -> id
-- KEYS[12] -> cd:{<queue>}:skips      SET   "operator\nid"
-- KEYS[13] -> cd:{<queue>}:skipcount  HASH  operator -> live skips
-- Scripts answer a table whose first element is a status code; codes other
-- than "ok" are turned into Go errors in one place (scripts.go).

local K = {
  conf = KEYS[1], meta = KEYS[8], payload = KEYS[9], result = KEYS[10],
  idem = KEYS[11], skips = KEYS[12], skipcount = KEYS[13],
}
local INDEX = {
  ready = KEYS[2], scheduled = KEYS[3], reserved = KEYS[4],
  completed = KEYS[5], dead = KEYS[6], canceled = KEYS[7],
}

-- clock returns now in ms: the caller's explicit value (tests), else Redis TIME.
local function clock(arg)
  if arg ~= nil and arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- settings returns the queue's settings as numbers, or nil if it does not exist.
local function settings()
  local raw = redis.call('HGETALL', K.conf)
  if #raw == 0 then return nil end
  local c = {}
  for i = 1, #raw, 2 do c[raw[i]] = tonumber(raw[i + 1]) end
  return c
end

local function load(id)
  local raw = redis.call('HGET', K.meta, id)
  if not raw then return nil end
  return cjson.decode(raw)
end

local function store(id, m)
  redis.call('HSET', K.meta, id, cjson.encode(m))
end

-- move takes the job out of the index of its state and files it under a new one.
local function move(id, m, state, score)
  redis.call('ZREM', INDEX[m.state], id)
  m.state = state
  redis.call('ZADD', INDEX[state], score, id)
end

local function end_reservation(m)
  m.reserved_by, m.reserved_at, m.deadline, m.token, m.extensions = nil, nil, nil, nil, nil
end

-- back_in_line returns a job to ready at the rank it had, so it keeps its place.
local function back_in_line(id, m)
  end_reservation(m)
  move(id, m, 'ready', m.rank)
end

-- forget_skips drops the skip records of a job that will never be offered again.
local function forget_skips(id, m)
  if not m.skipped_by then return end
  for _, op in ipairs(m.skipped_by) do
    redis.call('SREM', K.skips, op .. '\n' .. id)
    if redis.call('HINCRBY', K.skipcount, op, -1) <= 0 then
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
-- more expired reservations remain, and {id, former holder, new state} per job.
local function reclaim(now, limit)
  local expired = redis.call('ZRANGEBYSCORE', INDEX.reserved, '-inf', now, 'LIMIT', 0, limit + 1)
  local moved = {}
  for i = 1, math.min(#expired, limit) do
    local id = expired[i]
    local m = load(id)
    local holder = m.reserved_by
    spend_attempt(id, m, now, 'reservation expired (held by ' .. holder .. ')')
    store(id, m)
    moved[i] = {id, holder, m.state}
  end
  return #expired > limit, moved
end

-- promote moves at most limit due scheduled jobs to ready; true if more are due.
local function promote(now, limit)
  local due = redis.call('ZRANGEBYSCORE', INDEX.scheduled, '-inf', now, 'LIMIT', 0, limit + 1)
  local promoted = {}
  for i = 1, math.min(#due, limit) do
    local id = due[i]
    local m = load(id)
    move(id, m, 'ready', m.rank)
    store(id, m)
    promoted[i] = id
  end
  return #due > limit, promoted
end

-- reply answers a job: {"ok", id, meta JSON, payload, extra values...}.
local function reply(id, m, ...)
  return {'ok', id, cjson.encode(m), redis.call('HGET', K.payload, id), ...}
end
