-- requeue.lua: a supervisor puts a dead job back in line with fresh attempts,
-- or takes a reserved job away from its holder (force release: the token
-- dies). A requeued dead job waits from now on (run_at), not from when it
-- was made; it keeps its rank, its place in line. A job of a canceled batch is not requeued from dead, and a force
-- release cancels it.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> actor: the supervisor
-- ARGV[4], ARGV[5] -> the state and holder the actor saw (as_seen, lib.lua:
--                     of a job several hold, one of them, or all, or none)
-- ARGV[6] -> why the actor requeues ("": not said)
-- Output: {"not_found"}, {"invalid_state"}, {"reason_required"} (the queue
--         requires one: require_reason), or {"ok", id, metadata, payload, former holder or ""}
clock(ARGV[1])
local id = ARGV[2]
local m = load(id)
if not m then return answer('not_found') end
if not as_seen(m, ARGV[4], ARGV[5]) then return answer('invalid_state') end
local holder, action = '', 'requeued'
if m.state == 'dead' then
  local b = batch(m.batch)
  if b and b.state == 'canceled' then return answer('invalid_state') end
elseif m.state == 'reserved' then
  holder, action = m.reserved_by, 'force_released'
else
  return answer('invalid_state')
end
-- Refused before the job is touched: a joined call's later changes see
-- the job as loaded.
if unexplained(ARGV[6]) then return answer('reason_required') end
-- A dead job's wait starts over: K.waiting (the oldest wait) counts from now.
-- Its due time stays: it is watched again as it stands.
local revived = m.state == 'dead'
if revived then m.attempts, m.finished_at, m.run_at = 0, nil, NOW end
if revived and m.answers then mark_answerers(id, m) end
-- A force release that names no one holder takes the job from everyone
-- who holds it (lib.lua, Seats).
if m.state == 'reserved' and everyone(ARGV[5]) then drop_seats(id, m, action, ARGV[3], said(ARGV[6])) end
back_in_line(id, m, action, ARGV[3], said(ARGV[6]))
if revived and m.due_at then rewatch(id, m) end
-- A preferred job whose people's time ran out meanwhile falls back at
-- the next claim.
if revived and m.fallback_at then note_fallback(id, m.fallback_at) end
if revived then returned(id, m) end
return reply(id, store(id, m), holder)
