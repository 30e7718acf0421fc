-- head.lua: the job a claim of the queue by the operator would take next
-- (skips aside), and what ranks it against other queues' (Store.ClaimAny).
-- Reads only.
-- KEYS    -> conf, ready, meta, readydue, routed, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> the operator
-- ARGV[3], ARGV[4] -> the skills lines the operator may take from, as
--            claim.lua's ARGV[9] and ARGV[10]
-- Output: {"queue_not_found"}, {"empty"}, {"routes"} (as claim.lua's), or
--         {"ok", id, priority, waiting
--         since ms, ageing ms per priority point (0: strict), now ms, due
--         time ms (0: none, or the queue claims by rank)}
local now = clock(ARGV[1])
local conf = redis.call('HMGET', K.conf, 'aging_ms', 'order', 'routed', 'routes_v', 'seats', 'overlap_at_once')
if not conf[1] then return plain('queue_not_found') end
local given = given_lines(ARGV[3], ARGV[4])
if conf[3] == '1' and routes_stale(given, conf[4]) then return plain('routes') end
local head = next_for(ARGV[2], given, conf[3] == '1' and {seats = conf[5] == '1' and conf[6] == '1'}, conf[2] == 'due', 0, function() return true end)
if not head then return plain('empty') end
local m = load(head)
local due = 0
if conf[2] == 'due' then due = m.due_at or 0 end
return plain('ok', head, m.priority, m.run_at, tonumber(conf[1]), now, due)
