-- promote.lua: moves at most limit due scheduled jobs to ready.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- Output: {"queue_not_found"}, or {"ok", more (0|1), jobs moved}
clock(ARGV[1])
if redis.call('EXISTS', K.conf) == 0 then return answer('queue_not_found') end
local more, n = promote(tonumber(ARGV[2]))
return answer('ok', more and 1 or 0, n)
