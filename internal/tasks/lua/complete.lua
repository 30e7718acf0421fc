-- complete.lua: finishes a reserved job with a result (fenced by token).
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> result JSON (empty: none)
-- Output: {"not_found"}, {"reservation_lost"}, or {"ok", id, metadata, payload}
local now = clock(ARGV[1])
local id = ARGV[2]
local m, err = held(id, ARGV[3], now)
if not m then return {err} end
if ARGV[4] ~= '' then redis.call('HSET', K.result, id, ARGV[4]) end
finish(id, m, 'completed', now)
return reply(id, store(id, m))
