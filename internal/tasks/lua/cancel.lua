-- cancel.lua: cancels a ready or scheduled job; with force, also a reserved
-- one (its holder's token dies).
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> "force" to cancel a reserved job too
-- Output: {"not_found"}, {"invalid_state"}, or {"ok", id, metadata, payload, former holder or ""}
local now = clock(ARGV[1])
local id = ARGV[2]
local m = load(id)
if not m then return {'not_found'} end
local holder = m.reserved_by or ''
if not (m.state == 'ready' or m.state == 'scheduled' or (m.state == 'reserved' and ARGV[3] == 'force')) then
  return {'invalid_state'}
end
finish(id, m, 'canceled', now)
return reply(id, store(id, m), holder)
