-- queue_put.lua: writes settings of a queue, creating it or not as asked.
-- KEYS    -> conf (of the queue's keys, see lib.lua)
-- ARGV[1] -> "create": only a queue that does not exist yet; "update":
--            only one that does; "put": either
-- ARGV[2…] -> setting, value, setting, value, …: the settings written
-- Output: {"queue_exists"}, {"queue_not_found"}, or {"ok", every setting
--         of the queue as stored: setting, value, …}
local exists = redis.call('EXISTS', K.conf) == 1
if ARGV[1] == 'create' and exists then return answer('queue_exists') end
if ARGV[1] == 'update' and not exists then return answer('queue_not_found') end
-- A new queue's waiting index is whole from the start (waiting_index.lua).
if not exists then redis.call('HSET', K.conf, 'waiting_indexed', '1') end
redis.call('HSET', K.conf, unpack(ARGV, 2))
return answer('ok', unpack(redis.call('HGETALL', K.conf)))
