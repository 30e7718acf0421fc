-- move_out.lua: ends the move of a job on its way to another queue
-- (K.moving, sla.lua). Made there (ARGV[3] "made": move_in.lua), it is
-- deleted here, and its old id leads to the new one (K.moved, K.movedat)
-- as long as a finished job is kept; not made (that queue is gone), it
-- goes back in line here.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, parked,
--            waiting, outbox, drafts, sla, late, readydue, moving, moved,
--            movedat
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
if ARGV[3] ~= 'made' then
  file(id, m, m.state == 'ready' and m.rank or m.run_at, nil)
  return answer('ok', 0)
end
forget_skips(id, m)
record(id, m, 'moved', m.state, '', 'system', nil, to)
redis.call('ZREM', K.sla, id)
redis.call('ZREM', K.late, id)
redis.call('HDEL', K.meta, id)
redis.call('HDEL', K.payload, id)
redis.call('HDEL', K.result, id)
redis.call('HDEL', K.drafts, id, id .. '\nkept')
-- Its idempotency key still names it here, and leads to it there, until
-- the old id is forgotten (purge.lua).
local moved = to
if m.idempotency_key then moved = to .. '\n' .. m.idempotency_key end
redis.call('HSET', K.moved, id, moved)
redis.call('ZADD', K.movedat, int(NOW), id)
return answer('ok', 1)
