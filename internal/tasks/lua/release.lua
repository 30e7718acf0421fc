-- release.lua: the holder gives a reserved job back to its place in line.
-- BUDGET release: 16 commands
--   (in a plain queue, lib.lua's The oldest wait: TIME, HGET meta, the
--   tally's HGET and HSET, HDEL drafts, ZREM holding and reserved, the
--   HGET of conf's "plain", ZADD ready, HSET meta, HGET payload, five
--   ZCARDs)
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the user acting
-- ARGV[5] -> "skip": also never offer the job to its holder again
-- ARGV[6] -> most unfinished jobs one operator may have skipped in the queue
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"},
--         {"skip_limit"}, or {"ok", id, metadata, payload}
clock(ARGV[1])
local id, op = ARGV[2], ARGV[4]
local skip = ARGV[5] == 'skip'
local action = 'released'
if skip then action = 'skipped' end
local m, done = take(id, ARGV[3], op, action)
if not m then return done end
if skip and not not_for(id, m, op, tonumber(ARGV[6])) then return answer('skip_limit') end
back_in_line(id, m, action, op)
return reply(id, store(id, m))
