-- cancel.lua: cancels a ready or scheduled job; with force, also a reserved
-- one (its holder's token dies).
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, moving, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> "force" to cancel a reserved job too
-- ARGV[4] -> actor: the user canceling
-- ARGV[5], ARGV[6] -> the state and holder the actor saw (as_seen, lib.lua)
-- ARGV[7] -> why the actor cancels ("": not said)
-- Output: {"not_found"}, {"invalid_state"}, {"reason_required"} (the queue
--         requires one: require_reason), or {"ok", id, metadata, payload, former holder or ""}
clock(ARGV[1])
local id = ARGV[2]
local m = load(id)
if not m then return answer('not_found') end
if not as_seen(m, ARGV[5], ARGV[6]) or
  not (m.state == 'ready' or m.state == 'scheduled' or (m.state == 'reserved' and ARGV[3] == 'force')) then
  return answer('invalid_state')
end
-- A cancel ends every reservation of a job several hold (lib.lua, Seats):
-- a page must have seen them all, or it would end one made since.
if m.seats and ARGV[5] == 'reserved' and not everyone(ARGV[6]) then return answer('invalid_state') end
-- A job that missed its due time may be on its way to another queue
-- (sla.lua), made there already: it is canceled there, once it is.
if m.state ~= 'reserved' and m.due_at and redis.call('HEXISTS', K.moving, id) == 1 then
  return answer('invalid_state')
end
if unexplained(ARGV[7]) then return answer('reason_required') end
local holder = ''
if m.state == 'reserved' then holder = m.reserved_by end
finish(id, m, 'canceled', 'canceled', ARGV[4], said(ARGV[7]))
return reply(id, store(id, m), holder)
