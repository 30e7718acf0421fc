-- move_out.lua: ends the move of a job on its way to another queue
-- (K.moving, sla.lua). Made there (ARGV[3] "made": move_in.lua), it is
-- deleted here, and its old id leads to the new one (K.moved, K.movedat)
-- as long as a finished job is kept, and its batch counts it as moved
-- (K.away) until it ends there; not made (that queue is gone), it goes
-- back in line here.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, moving, moved, movedat, away, returns, routed,
--            routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> "made" or "gone"
-- Output: {"ok", moved (1 or 0)}
clock(ARGV[1])
local id = ARGV[2]
local to = redis.call('HGET', K.moving, id)
if not to then return answer('ok', 0) end
redis.call('HDEL', K.moving, id)
local m = load(id)
if not m then return answer('ok', 0) end
local b = batch(m.batch)
if ARGV[3] ~= 'made' then
  if b and b.state == 'canceled' then
    -- Its batch was canceled meanwhile, which passed it by.
    finish(id, m, 'canceled', 'canceled', 'system')
    store(id, m)
    return answer('ok', 0)
  end
  file(id, m, m.state == 'ready' and m.rank or m.run_at, b)
  if b then settle(m.batch, b) end
  return answer('ok', 0)
end
if b then
  b.ready, b.moved = b.ready - 1, b.moved + 1
  redis.call('HSET', K.away, id, 'moved')
  settle(m.batch, b)
end
forget_skips(id, m)
record(id, m, 'moved', m.state, '', 'system', nil, to)
redis.call('ZREM', K.sla, id)
redis.call('ZREM', K.late, id)
if m.fallback_at then redis.call('ZREM', K.fallback, id) end
redis.call('ZREM', K.waiting, id) -- in case an index of an earlier version's queue filed it meanwhile
redis.call('HDEL', K.meta, id)
redis.call('HDEL', K.payload, id)
redis.call('HDEL', K.result, id, id .. '\nanswers', id .. '\nagreement', id .. '\nreview')
redis.call('HDEL', K.drafts, id, id .. '\nkept')
-- Its idempotency key still names it here, and leads to it there, until
-- the old id is forgotten with its batch's record of it (purge.lua); its
-- record is what moved_to (lib.lua) reads.
redis.call('HSET', K.moved, id, to .. '\n' .. (m.idempotency_key or '') .. '\n' .. (m.batch or ''))
redis.call('ZADD', K.movedat, int(NOW), id)
return answer('ok', 1)
