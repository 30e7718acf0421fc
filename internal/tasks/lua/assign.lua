-- assign.lua: a supervisor routes a job to one person, who alone may claim
-- it from then on (lib.lua, Routing): a waiting job (ready, in its place
-- in line, or scheduled) is assigned; a held one is transferred: its
-- reservation ends (its holder's token dies, their draft is kept for the
-- next holder) and it waits in its place for the person. A preferred job
-- is preferred no longer: it waits for the person alone.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, moving, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> the person
-- ARGV[4] -> actor: the supervisor
-- ARGV[5], ARGV[6] -> the state and holder the actor saw (as_seen, lib.lua)
-- ARGV[7] -> why the actor assigns ("": not said)
-- Output: {"not_found"}, {"invalid_state"} (finished, or not as seen, or
--         a job waiting for review, or a job with overlap the person
--         holds or held),
--         {"reason_required"} (a transfer, in a queue that requires one:
--         require_reason), or {"ok", id, metadata, payload, former holder
--         or ""}
clock(ARGV[1])
local id, person, actor = ARGV[2], ARGV[3], ARGV[4]
local m = load(id)
if not m then return answer('not_found') end
if not as_seen(m, ARGV[5], ARGV[6]) or m.finished_at or not (m.state == 'ready' or m.state == 'scheduled' or m.state == 'reserved') then
  return answer('invalid_state')
end
if redis.call('HEXISTS', K.moving, id) == 1 then return answer('invalid_state') end
-- A job waiting for review is for reviewers (lib.lua, Review); a job with
-- overlap goes to nobody who holds or held it (lib.lua, Overlap).
if m.review then return answer('invalid_state') end
-- A job several people hold at once is theirs together: only one named
-- (as_seen) is transferred.
if m.seats and everyone(ARGV[6]) then return answer('invalid_state') end
if m.overlap and (m.state == 'reserved' and m.reserved_by == person or redis.call('SISMEMBER', K.skips, person .. '\n' .. id) == 1) then
  return answer('invalid_state')
end
local holder = ''
if m.state == 'reserved' then
  holder = m.reserved_by
  if unexplained(ARGV[7]) then return answer('reason_required') end
end
-- The history entry's reason names the person, then, on a line of its
-- own, why (Entry.Assignee).
local reason = person
if ARGV[7] ~= '' then reason = person .. '\n' .. ARGV[7] end
if m.fallback_at then redis.call('ZREM', K.fallback, id) end
redis.call('HSET', K.conf, 'routed', '1')
if m.state == 'reserved' then
  m.route_to, m.fallback_at = person, nil
  back_in_line(id, m, 'transferred', actor, reason)
else
  -- In line, it moves to the person's line, in its place; parked or
  -- scheduled, it stays where it is until it comes in line.
  local lined = m.state == 'ready' and out_of_line(id, m)
  m.route_to, m.fallback_at = person, nil
  if lined then line_up(id, m) end
  record(id, m, 'assigned', m.state, m.state, actor, nil, reason)
end
return reply(id, store(id, m), holder)
