-- outbox.lua: turns the queue's outbox on or off (lib.lua, publish). On,
-- it also makes the outbox's consumer group, reading from the start, so
-- that the group exists before the first event does. Off keeps the
-- stream and its group: events already in it are still handed on.
-- KEYS    -> conf, outbox
-- ARGV[1] -> "on" or "off"
-- ARGV[2] -> the consumer group's name
-- Output: {"queue_not_found"} or {"ok"}
if redis.call('EXISTS', K.conf) == 0 then return plain('queue_not_found') end
if ARGV[1] == 'off' then
  redis.call('HDEL', K.conf, 'outbox')
  return plain('ok')
end
redis.call('HSET', K.conf, 'outbox', '1')
local made = redis.pcall('XGROUP', 'CREATE', K.outbox, ARGV[2], '0', 'MKSTREAM')
if type(made) == 'table' and made.err and not string.find(made.err, 'BUSYGROUP', 1, true) then
  return redis.error_reply(made.err)
end
return plain('ok')
