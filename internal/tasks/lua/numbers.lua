-- numbers.lua: samples the queue's numbers of the minute under way into
-- K.numbers (one member per minute, replaced by each sample of the
-- minute), and drops the minutes more than ARGV[2] old. A sample is the
-- minute, the ready jobs, the claims counter, the completions and deaths
-- within the minute, the oldest wait, then the day's counters of
-- completions of jobs with a due time (lib.lua, tally): the day, those
-- completed, those completed before their due time.
-- KEYS    -> conf, ready, completed, dead, parked, numbers, waiting
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> minutes to keep
-- Output: {"queue_not_found"}, or {"ok"}
local now = clock(ARGV[1])
local keep = tonumber(ARGV[2])
local conf = redis.call('HMGET', K.conf, 'claims', 'max_hold_seconds', 'sla_day', 'sla_done', 'sla_on_time')
if not conf[2] then return plain('queue_not_found') end
local minute = math.floor(now / 60000)
local from, to = int(minute * 60000), '(' .. int((minute + 1) * 60000)
local oldest = oldest_waiting()
if oldest > 0 then oldest = math.max(now - oldest, 0) end
local sample = table.concat({int(minute),
  redis.call('ZCARD', INDEX.ready) + redis.call('ZCARD', K.parked), conf[1] or '0',
  redis.call('ZCOUNT', INDEX.completed, from, to), redis.call('ZCOUNT', INDEX.dead, from, to), int(oldest),
  conf[3] or '0', conf[4] or '0', conf[5] or '0'}, ' ')
-- The minute's earlier sample goes, and every minute older than keep.
redis.call('ZREMRANGEBYSCORE', K.numbers, int(minute), int(minute))
redis.call('ZREMRANGEBYSCORE', K.numbers, '-inf', '(' .. int(minute - keep))
redis.call('ZADD', K.numbers, int(minute), sample)
return plain('ok')
