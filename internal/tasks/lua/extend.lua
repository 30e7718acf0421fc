-- extend.lua: moves a reservation's deadline forward (fenced by token), never
-- backward, within the queue's max extensions and max total hold.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> seconds from now
-- Output: {"not_found"}, {"reservation_lost"}, {"extension_limit"}, {"queue_not_found"},
--         or {"ok", id, metadata, payload}
local now = clock(ARGV[1])
local id = ARGV[2]
local m, err = held(id, ARGV[3], now)
if not m then return {err} end
local c = settings('max_hold_seconds', 'max_extensions')
if not c then return {'queue_not_found'} end
local wanted = now + tonumber(ARGV[4]) * 1000
if wanted <= m.deadline then return reply(id, redis.call('HGET', K.meta, id)) end
local cap = m.reserved_at + c.max_hold_seconds * 1000
if m.extensions >= c.max_extensions or cap <= m.deadline then return {'extension_limit'} end
m.deadline = math.min(wanted, cap)
m.extensions = m.extensions + 1
redis.call('ZADD', INDEX.reserved, m.deadline, id)
return reply(id, store(id, m))
