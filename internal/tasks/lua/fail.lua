-- fail.lua: the holder reports the job failed; it goes back in line for
-- another attempt, not offered to the holder again while it waits (as
-- after a skip: not_for, lib.lua; unless the holder is at the skip limit,
-- when it may come back to them), or dead when its attempts are used up.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the user acting
-- ARGV[5] -> reason
-- ARGV[6] -> most unfinished jobs one operator may have skipped in the queue
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"},
--         {"invalid_state"} (a review's reservation), or {"ok", id,
--         metadata, payload}
clock(ARGV[1])
local id = ARGV[2]
local m, done = take(id, ARGV[3], ARGV[4], 'failed')
if not m then return done end
-- A review is approved or sent back (lib.lua, Review).
if m.review then return answer('invalid_state') end
spend_attempt(id, m, 'failed', ARGV[4], ARGV[5])
if m.state == 'ready' then not_for(id, m, ARGV[4], tonumber(ARGV[6])) end
return reply(id, store(id, m))
