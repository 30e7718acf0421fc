-- head.lua: the job a claim of the queue would take next (skips aside), and
-- what ranks it against other queues' (Store.ClaimAny). Reads only.
-- KEYS    -> conf, ready, meta
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- Output: {"queue_not_found"}, {"empty"}, or {"ok", id, priority, waiting
--         since ms, ageing ms per priority point (0: strict), now ms}
local now = clock(ARGV[1])
local aging = redis.call('HGET', K.conf, 'aging_ms')
if not aging then return plain('queue_not_found') end
local head = redis.call('ZRANGE', INDEX.ready, '0', '0')[1]
if not head then return plain('empty') end
local m = load(head)
return plain('ok', head, m.priority, m.run_at, tonumber(aging), now)
