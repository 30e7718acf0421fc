-- requeue.lua: a supervisor puts a dead job back in line with fresh attempts,
-- or takes a reserved job away from its holder (force release: the token dies).
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> job id
-- Output: {"not_found"}, {"invalid_state"}, or {"ok", id, meta JSON, payload, former holder or ""}
local id = ARGV[1]
local m = load(id)
if not m then return {'not_found'} end
local holder = m.reserved_by or ''
if m.state == 'dead' then
  m.attempts, m.finished_at = 0, nil
elseif m.state ~= 'reserved' then
  return {'invalid_state'}
end
back_in_line(id, m)
store(id, m)
return reply(id, m, holder)
