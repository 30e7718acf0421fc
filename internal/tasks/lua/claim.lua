-- claim.lua: reserves the best-ranked ready job the operator has not skipped
-- (or, given a job id, that job if it is in line and not skipped by them);
-- claim_for (lib.lua) says how.
-- BUDGET claim: 18 commands
--   (a plain queue, lib.lua's The oldest wait; nothing expired or due, no
--   skips, no key: TIME, the settings' HMGET, two ZCOUNTs for expired and
--   due, the skips' HGET, ZRANGE ready, HGET meta, ZADD holding, ZREM
--   ready, ZADD reserved, HINCRBY
--   claims, HSET meta, HGET payload, five ZCARDs)
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> operator
-- ARGV[3] -> fresh reservation token
-- ARGV[4] -> most expired reservations to reclaim and scheduled jobs to promote
-- ARGV[5] -> most skipped jobs to look past
-- ARGV[6] -> idempotency key (empty: none)
-- ARGV[7] -> job id to claim (empty: the best-ranked)
-- ARGV[8] -> "1": only answer the live reservation named by the key again,
--            claim nothing new (empty: claim)
-- ARGV[9] -> the count of the queue's skills lines Go knows (lib.lua,
--            Routing), and ARGV[10] those the operator may take from, one
--            per line of text; or "review" and "": a review claim, which
--            takes from the review line alone (lib.lua, Review)
-- Output: {"queue_not_found"}, {"queue_paused"}, {"hold_limit"}, {"empty"},
--         {"routes"} (Go's skills lines are not the queue's: read them again),
--         {"not_ready"} (the job asked for
--         is not in line for this operator), or {"ok", id, metadata, payload}
clock(ARGV[1])
local mode = ''
if ARGV[8] == '1' then mode = 'again' end
local status, id, raw = claim_for(ARGV[2], given_lines(ARGV[9], ARGV[10]), ARGV[3], num(ARGV[4]), num(ARGV[5]), ARGV[6], ARGV[7], mode)
if status ~= 'ok' then return answer(status) end
return reply(id, raw)
