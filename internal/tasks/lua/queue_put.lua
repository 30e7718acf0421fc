-- queue_put.lua: writes settings of a queue, creating it or not as asked.
-- Each write counts in the settings' revision, conf's "rev", so a change
-- made from settings read before can tell whether they still hold.
-- KEYS    -> conf
-- ARGV[1] -> "create": only a queue that does not exist yet; "update":
--            only one that does; "put": either; "update <rev>": only one
--            whose settings are still at that revision (0: never written
--            since revisions are counted)
-- ARGV[2…] -> setting, value, setting, value, …: the settings written
-- Output: {"queue_exists"}, {"queue_not_found"}, {"changed"} (another
--         revision), or {"ok", every setting of the queue as stored:
--         setting, value, …}
local mode, rev = string.match(ARGV[1], '^(%a+) ?(%d*)$')
local exists = redis.call('EXISTS', K.conf) == 1
if mode == 'create' and exists then return plain('queue_exists') end
if mode == 'update' and not exists then return plain('queue_not_found') end
if rev ~= '' and (redis.call('HGET', K.conf, 'rev') or '0') ~= rev then return plain('changed') end
-- A new queue is plain: it needs no waiting index until a job makes it
-- otherwise (lib.lua, The oldest wait).
if not exists then redis.call('HSET', K.conf, 'plain', 'new') end
redis.call('HSET', K.conf, unpack(ARGV, 2))
redis.call('HINCRBY', K.conf, 'rev', 1)
return plain('ok', unpack(redis.call('HGETALL', K.conf)))
