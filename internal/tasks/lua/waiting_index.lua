-- waiting_index.lua: indexes, in K.waiting, the ready jobs of a queue made
-- before that index was kept, or that stopped being plain with more ready
-- jobs than are indexed at once (lib.lua, The oldest wait), ARGV[2] jobs'
-- metadata at a time: the scripts keep it for every job that changes
-- meanwhile, so a walk of every job once, each indexed if ready when seen,
-- makes it whole. Conf's waiting_cursor is where the walk is;
-- waiting_indexed is set when done.
-- KEYS    -> conf, meta, waiting
-- ARGV[1] -> now in ms (unused; every maintenance script takes it)
-- ARGV[2] -> how many jobs to look at, about (HSCAN's COUNT)
-- Output: {"queue_not_found"}, or {"ok", 1 if the walk goes on else 0,
--         ready jobs indexed}
if redis.call('EXISTS', K.conf) == 0 then return plain('queue_not_found') end
-- A plain queue needs no index (lib.lua, The oldest wait).
local done = redis.call('HMGET', K.conf, 'plain', 'waiting_indexed', 'waiting_cursor')
if done[2] or as_plain(done[1], done[2], done[3]) then return plain('ok', 0, 0) end
local at = done[3] or '0'
local step = redis.call('HSCAN', K.meta, at, 'COUNT', ARGV[2])
local n, found = 0, step[2]
for i = 1, #found, 2 do
  local id = found[i]
  local m = load(id)
  if m.state == 'ready' then
    redis.call('ZADD', K.waiting, int(m.run_at), id)
    n = n + 1
  end
end
if step[1] == '0' then
  redis.call('HSET', K.conf, 'waiting_indexed', '1')
  redis.call('HDEL', K.conf, 'waiting_cursor')
  return plain('ok', 0, n)
end
redis.call('HSET', K.conf, 'waiting_cursor', step[1])
return plain('ok', 1, n)
