-- reclaim.lua: ends at most limit reservations whose deadline has passed;
-- each job goes back in line with one attempt spent, or dead. First it
-- files under their holders the reservations made before the holding index
-- was kept (index_holding).
-- BUDGET reclaim 3 jobs: 35 commands
--   (in a plain queue, lib.lua's The oldest wait; 11 a call: TIME, EXISTS,
--   the holding index's two ZCARDs, ZRANGEBYSCORE, the HGET of conf's
--   "plain", five ZCARDs; and 8 a job: HGET meta, the tally's HGET and
--   HSET, HMGET drafts, ZREM holding and reserved, ZADD ready, HSET meta)
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- Output: {"queue_not_found"}, or {"ok", more (0|1), jobs moved}
clock(ARGV[1])
if redis.call('EXISTS', K.conf) == 0 then return answer('queue_not_found') end
index_holding(tonumber(ARGV[2]))
local more, n = reclaim(tonumber(ARGV[2]))
return answer('ok', more and 1 or 0, n)
