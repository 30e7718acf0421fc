-- reclaim.lua: ends at most limit reservations whose deadline has passed;
-- each job goes back in line with one attempt spent, or dead.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- Output: {"queue_not_found"}, or {"ok", more (0|1), then per job: id, former holder, new state}
local now = clock(ARGV[1])
if redis.call('EXISTS', K.conf) == 0 then return {'queue_not_found'} end
local limit = tonumber(ARGV[2])
local expired = redis.call('ZRANGEBYSCORE', INDEX.reserved, '-inf', now, 'LIMIT', 0, limit + 1)
local out = {'ok', #expired > limit and 1 or 0}
for i = 1, math.min(#expired, limit) do
  local id = expired[i]
  local m = load(id)
  local holder = m.reserved_by
  spend_attempt(id, m, now, 'reservation expired (held by ' .. holder .. ')')
  store(id, m)
  table.insert(out, id)
  table.insert(out, holder)
  table.insert(out, m.state)
end
return out
