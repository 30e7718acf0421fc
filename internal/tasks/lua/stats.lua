-- stats.lua: counts of the queue's jobs per state. Reads only.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, parked, waiting, late, readydue
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> window in ms for "completed recently"
-- Output: {"queue_not_found"}, or {"ok", ready, scheduled, reserved, completed, dead, canceled,
--         completed within the window, due scheduled, ready time of the next job in ms or 0,
--         ready jobs held back by their batch's max_concurrent, since when
--         the oldest ready job waits in ms or 0 (lib.lua, oldest_waiting),
--         dead jobs that died since the (UTC) day began, unfinished jobs
--         at risk of missing their due time, and past it, the day's
--         completions of jobs with a due time and those before it
--         (lib.lua, tally), then the queue's settings as field, value, ...}
-- Ready counts every ready job: those in the claim line and those held back.
-- A dead job's score in its index is when it died.
local now = clock(ARGV[1])
-- The settings, read once: answered whole, and the claim order and the
-- day's attainment looked up in them.
local settings = redis.call('HGETALL', K.conf)
if #settings == 0 then return plain('queue_not_found') end
local conf = {}
for i = 1, #settings, 2 do conf[settings[i]] = settings[i + 1] end
local done, on_time = 0, 0
if tonumber(conf.sla_day) == math.floor(now / 86400000) then done, on_time = tonumber(conf.sla_done), tonumber(conf.sla_on_time) end
local next_since = 0
local head = {}
if conf.order == 'due' then head = redis.call('ZRANGE', K.readydue, 0, 0) end
if not head[1] then head = redis.call('ZRANGE', INDEX.ready, 0, 0) end
if head[1] then next_since = load(head[1]).run_at end
return plain('ok',
  redis.call('ZCARD', INDEX.ready) + redis.call('ZCARD', K.parked), redis.call('ZCARD', INDEX.scheduled),
  redis.call('ZCARD', INDEX.reserved), redis.call('ZCARD', INDEX.completed),
  redis.call('ZCARD', INDEX.dead), redis.call('ZCARD', INDEX.canceled),
  redis.call('ZCOUNT', INDEX.completed, now - tonumber(ARGV[2]), '+inf'),
  redis.call('ZCOUNT', INDEX.scheduled, '-inf', now), next_since, redis.call('ZCARD', K.parked),
  oldest_waiting(), redis.call('ZCOUNT', INDEX.dead, int(now - now % 86400000), '+inf'),
  redis.call('ZCOUNT', K.late, '(' .. int(now), '+inf'), redis.call('ZCOUNT', K.late, '-inf', int(now)),
  done, on_time, unpack(settings))
