-- reclaim.lua: ends at most limit reservations whose deadline has passed;
-- each job goes back in line with one attempt spent, or dead.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- Output: {"queue_not_found"}, or {"ok", more (0|1), then per job: id,
--         former holder, new state, batch id or ""}
local now = clock(ARGV[1])
if redis.call('EXISTS', K.conf) == 0 then return {'queue_not_found'} end
local more, moved = reclaim(now, tonumber(ARGV[2]))
local out = {'ok', more and 1 or 0}
for _, r in ipairs(moved) do
  for _, v in ipairs(r) do table.insert(out, v) end
end
return out
