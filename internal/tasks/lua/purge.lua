-- purge.lua: retention. Deletes at most limit finished jobs (completed,
-- canceled, dead) that finished before their cut-off, then, within what is
-- left of limit, finished batches older than both cut-offs (their jobs are
-- gone by then), and the old ids of jobs that moved to another queue
-- (move_out.lua) as long ago, but for those of batches that have yet to
-- end there. A job's history is part of its metadata and goes with it, its drafts
-- with it.
-- KEYS    -> conf, completed, dead, canceled, meta, payload, result, idem,
--            batches, batchindex, batchdone, members, drafts, moved, movedat,
--            away
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- Output: {"queue_not_found"}, or {"ok", more (0|1), number deleted}
local now = clock(ARGV[1])
local c = settings('retention_seconds', 'dead_retention_seconds')
if not c then return plain('queue_not_found') end
local budget = tonumber(ARGV[2])
local deleted, more = 0, false
local cutoffs = {
  {INDEX.completed, now - c.retention_seconds * 1000},
  {INDEX.canceled, now - c.retention_seconds * 1000},
  {INDEX.dead, now - c.dead_retention_seconds * 1000},
}
for _, rule in ipairs(cutoffs) do
  local index, cutoff = rule[1], rule[2]
  local old = redis.call('ZRANGEBYSCORE', index, '-inf', cutoff, 'LIMIT', 0, budget + 1)
  if #old > budget then more = true end
  for i = 1, math.min(#old, budget) do
    local id = old[i]
    local m = load(id)
    if m and m.idempotency_key and redis.call('HGET', K.idem, m.idempotency_key) == id then
      redis.call('HDEL', K.idem, m.idempotency_key)
    end
    redis.call('ZREM', index, id)
    redis.call('HDEL', K.meta, id)
    redis.call('HDEL', K.payload, id)
    redis.call('HDEL', K.result, id, id .. '\nanswers', id .. '\nagreement', id .. '\nreview')
    -- Its drafts, if it saved any: one HDEL costs less than reading its
    -- history to know.
    redis.call('HDEL', K.drafts, id, id .. '\nkept')
    if m and m.batch then redis.call('ZREM', K.members, m.batch .. '|' .. id) end
  end
  deleted = deleted + math.min(#old, budget)
  budget = budget - math.min(#old, budget)
end
local cutoff = now - math.max(c.retention_seconds, c.dead_retention_seconds) * 1000
local old = redis.call('ZRANGEBYSCORE', K.batchdone, '-inf', cutoff, 'LIMIT', 0, budget + 1)
if #old > budget then more = true end
for i = 1, math.min(#old, budget) do
  redis.call('HDEL', K.batches, old[i])
  redis.call('ZREM', K.batchindex, old[i])
  redis.call('ZREM', K.batchdone, old[i])
end
deleted = deleted + math.min(#old, budget)
budget = budget - math.min(#old, budget)
old = redis.call('ZRANGEBYSCORE', K.movedat, '-inf', cutoff, 'LIMIT', 0, budget + 1)
if #old > budget then more = true end
for i = 1, math.min(#old, budget) do
  -- Where it went, its idempotency key and its batch (move_out.lua).
  local _, key, bid = moved_to(old[i])
  if bid and bid ~= '' and redis.call('HGET', K.away, old[i]) == 'moved' then
    -- Its batch waits for its end there: looked at again a cut-off later.
    redis.call('ZADD', K.movedat, int(now), old[i])
  else
    if bid and bid ~= '' then
      redis.call('HDEL', K.away, old[i])
      redis.call('ZREM', K.members, bid .. '|' .. old[i])
    end
    if key and key ~= '' and redis.call('HGET', K.idem, key) == old[i] then redis.call('HDEL', K.idem, key) end
    redis.call('HDEL', K.moved, old[i])
    redis.call('ZREM', K.movedat, old[i])
  end
end
deleted = deleted + math.min(#old, budget)
return plain('ok', more and 1 or 0, deleted)
