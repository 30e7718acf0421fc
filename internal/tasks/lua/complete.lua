-- complete.lua: the holder finishes a reserved job with a result.
-- KEYS    -> conf, ready, reserved, completed, meta, payload, result,
--            skips, skipcount, batches, batchdone, parked, claims (of the
--            queue's keys, see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the user acting
-- ARGV[5] -> result JSON (empty: none)
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"}, or {"ok", id,
--         metadata, payload, the result kept}: a retry answers the result
--         sent first
clock(ARGV[1])
local id = ARGV[2]
local m, done = take(id, ARGV[3], ARGV[4], 'completed')
if not m then
  if done[1] == 'ok' then table.insert(done, redis.call('HGET', K.result, id) or '') end
  return done
end
if ARGV[5] ~= '' then redis.call('HSET', K.result, id, ARGV[5]) end
finish(id, m, 'completed', 'completed', ARGV[4])
return reply(id, store(id, m), ARGV[5])
