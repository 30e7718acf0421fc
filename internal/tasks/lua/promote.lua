-- promote.lua: moves at most limit due scheduled jobs to ready.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- Output: {"queue_not_found"}, or {"ok", more (0|1), promoted ids...}
local now = clock(ARGV[1])
if redis.call('EXISTS', K.conf) == 0 then return {'queue_not_found'} end
local more, promoted = promote(now, tonumber(ARGV[2]))
local out = {'ok', more and 1 or 0}
for _, id in ipairs(promoted) do table.insert(out, id) end
return out
