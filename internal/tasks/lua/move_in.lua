-- move_in.lua: makes in this queue a job that missed its due time while
-- waiting in a queue whose breach queue this is (sla.lua), as it was
-- there: its ULID, history, attempts, priority, due time, kept drafts,
-- answers and a result waiting for review,
-- in line by its age and priority as this queue ranks them, breached; a
-- job of a batch there is in no batch here, but its batch's still.
-- The history says where from, and the job the queue it was enqueued
-- in (moved_from). A job made here already (a move tried
-- again) stays as it is.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, parked,
--            waiting, outbox, drafts, sla, late, readydue, routed, routes,
--            fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id (its ULID)
-- ARGV[3] -> the job's metadata and history, as the other queue stored them
-- ARGV[4] -> its payload
-- ARGV[5] -> its kept drafts, as the other queue stored them ("": none)
-- ARGV[6] -> the queue it comes from
-- ARGV[7] -> strict priority step in ms, used when the queue sets no ageing
-- ARGV[8] -> its answers, as the other queue stored them ("": none;
--            lib.lua, Overlap), ARGV[9] the result that waits for review
--            ("": none; lib.lua, Review) and ARGV[10] the answers'
--            agreement ("": none)
-- Output: {"queue_not_found"}, or {"ok", made (1 or 0)}
clock(ARGV[1])
local c = settings('aging_ms')
if not c then return answer('queue_not_found') end
local id = ARGV[2]
if redis.call('HEXISTS', K.meta, id) == 1 then return answer('ok', 0) end
local m = parse(ARGV[3])
local step = c.aging_ms
if step == nil or step <= 0 then step = tonumber(ARGV[7]) end
m.rank = m.run_at - m.priority * step
-- Where its producers put it, which still lets them read it, and its
-- batch there, which counts it until it ends here (returned, lib.lua).
m.moved_from = m.moved_from or ARGV[6]
if m.batch then m.batch_from, m.batch = m.batch, nil end
-- Its skips were the other queue's operators' (move_out.lua forgets them);
-- but a job with overlap is still never offered to those who held it, nor
-- one waiting for review to its author.
local held = (m.overlap or m.review) and m.skipped_by
m.skipped_by = nil
-- Whom it is routed to stays, and the time its preferred people have.
if m.skills or m.route_to then redis.call('HSET', K.conf, 'routed', '1') end
if m.fallback_at then note_fallback(id, m.fallback_at) end
record(id, m, 'moved', '', m.state, 'system', nil, ARGV[6])
file(id, m, m.state == 'ready' and m.rank or m.run_at, nil)
rewatch(id, m)
redis.call('HSET', K.payload, id, ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', K.drafts, id .. '\nkept', ARGV[5]) end
if ARGV[8] ~= '' then redis.call('HSET', K.result, id .. '\nanswers', ARGV[8]) end
if ARGV[9] ~= '' then redis.call('HSET', K.result, id .. '\nreview', ARGV[9]) end
if ARGV[10] ~= '' then redis.call('HSET', K.result, id .. '\nagreement', ARGV[10]) end
if m.review then redis.call('HSET', K.conf, 'routed', '1') end
for _, op in ipairs(held or {}) do not_for(id, m, op) end
store(id, m)
return answer('ok', 1)
