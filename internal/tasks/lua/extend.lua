-- extend.lua: the holder moves a reservation's deadline forward, never
-- backward, within the queue's max extensions and max total hold. Asked
-- with an idempotency key, the extension keeps it in its history entry: a
-- retry with the key of the reservation's latest extension (its answer
-- lost) answers the job as it is, and spends no second extension.
-- KEYS    -> conf, ready, scheduled, reserved, dead, meta, payload, result,
--            batches, parked, outbox, routed, routes, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the user acting
-- ARGV[5] -> seconds from now
-- ARGV[6] -> idempotency key (empty: none)
-- ARGV[7] -> "deadline": the seconds count from the deadline, not from now
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"},
--         {"extension_limit"}, {"queue_not_found"}, or {"ok", id, metadata,
--         payload}
local now = clock(ARGV[1])
local id = ARGV[2]
local m, done = take(id, ARGV[3], ARGV[4], 'extended')
if not m then return done end
local key = said(ARGV[6])
if key then
  -- While holders hold a job, their latest action is their claim or an
  -- extension (a due time's moments aside: last_action), whoever else
  -- holds it (lib.lua, Seats).
  local last, _, kept = last_action(m, ARGV[4])
  if last == ACTION_CODE.extended and kept == key then return reply(id, m.raw) end
end
local c = settings('max_hold_seconds', 'max_extensions')
if not c then return answer('queue_not_found') end
local from = now
if ARGV[7] == 'deadline' then from = m.deadline end
local wanted = from + tonumber(ARGV[5]) * 1000
if wanted <= m.deadline then return reply(id, m.raw) end
local cap = m.reserved_at + c.max_hold_seconds * 1000
if m.extensions >= c.max_extensions or cap <= m.deadline then return answer('extension_limit') end
m.deadline = math.min(wanted, cap)
m.extensions = m.extensions + 1
redis.call('ZADD', INDEX.reserved, int(held_until(m)), id)
record(id, m, 'extended', 'reserved', 'reserved', ARGV[4], m.reserved_by, key)
return reply(id, store(id, m))
