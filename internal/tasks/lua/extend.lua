-- extend.lua: the holder moves a reservation's deadline forward, never
-- backward, within the queue's max extensions and max total hold.
-- KEYS    -> conf, ready, scheduled, reserved, dead, meta, payload, result,
--            batches, parked, outbox
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the user acting
-- ARGV[5] -> seconds from now
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"},
--         {"extension_limit"}, {"queue_not_found"}, or {"ok", id, metadata,
--         payload}
local now = clock(ARGV[1])
local id = ARGV[2]
local m, done = take(id, ARGV[3], ARGV[4], 'extended')
if not m then return done end
local c = settings('max_hold_seconds', 'max_extensions')
if not c then return answer('queue_not_found') end
local wanted = now + tonumber(ARGV[5]) * 1000
if wanted <= m.deadline then return reply(id, m.raw) end
local cap = m.reserved_at + c.max_hold_seconds * 1000
if m.extensions >= c.max_extensions or cap <= m.deadline then return answer('extension_limit') end
m.deadline = math.min(wanted, cap)
m.extensions = m.extensions + 1
redis.call('ZADD', INDEX.reserved, int(m.deadline), id)
record(id, m, 'extended', 'reserved', 'reserved', ARGV[4], m.reserved_by)
return reply(id, store(id, m))
