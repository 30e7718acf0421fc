-- promote.lua: moves at most limit due scheduled jobs to ready, and lets at
-- most limit preferred jobs whose people's time ran out fall back to
-- anyone with their skills (fall_back, lib.lua).
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- Output: {"queue_not_found"}, or {"ok", more (0|1), jobs moved or fallen back}
clock(ARGV[1])
if redis.call('EXISTS', K.conf) == 0 then return answer('queue_not_found') end
local more, n = promote(tonumber(ARGV[2]))
local more_back, back = fall_back(tonumber(ARGV[2]))
return answer('ok', (more or more_back) and 1 or 0, n + back)
