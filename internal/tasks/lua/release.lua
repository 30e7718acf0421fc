-- release.lua: gives a reserved job back to its place in line (fenced by token).
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> "skip": also never offer the job to its holder again
-- ARGV[5] -> most unfinished jobs one operator may have skipped in the queue
-- Output: {"not_found"}, {"reservation_lost"}, {"skip_limit"}, or {"ok", id, metadata, payload}
local now = clock(ARGV[1])
local id = ARGV[2]
local m, err = held(id, ARGV[3], now)
if not m then return {err} end
if ARGV[4] == 'skip' then
  local op = m.reserved_by
  -- Claim looks past at most this many skipped jobs, so no more may exist.
  if tonumber(redis.call('HGET', K.skipcount, op) or '0') >= tonumber(ARGV[5]) then
    return {'skip_limit'}
  end
  if redis.call('SADD', K.skips, op .. '\n' .. id) == 1 then
    redis.call('HINCRBY', K.skipcount, op, 1)
    m.skipped_by = m.skipped_by or {}
    table.insert(m.skipped_by, op)
  end
end
back_in_line(id, m)
return reply(id, store(id, m))
