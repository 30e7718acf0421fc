-- waiting_for.lua: what one person may claim in the queue: how many jobs,
-- and the first of those routed to them by name (assigned, or preferring
-- them), without their payloads. Reads only.
-- KEYS    -> conf, ready, meta, routed
-- ARGV[1] -> the person
-- ARGV[2], ARGV[3] -> the skills lines they may take from, as claim.lua's
--            ARGV[9] and ARGV[10]
-- ARGV[4] -> at most this many of their own jobs
-- Output: {"queue_not_found"}, {"routes"} (as claim.lua's), or {"ok",
--         routed (1 if the queue ever had a routed job, else 0), how many
--         jobs they may claim, then per job of their own: id, metadata}
local conf = redis.call('HMGET', K.conf, 'max_hold_seconds', 'routed', 'routes_v')
if not conf[1] then return plain('queue_not_found') end
if conf[2] ~= '1' then return plain('ok', 0, redis.call('ZCARD', INDEX.ready)) end
local given = given_lines(ARGV[2], ARGV[3])
if routes_stale(given, conf[3]) then return plain('routes') end
-- The open line, then each of theirs (lib.lua, Routing).
local n = redis.call('ZCOUNT', INDEX.ready, '-inf', '(' .. int(ROUTED - 1e14))
local own = 'r@' .. ARGV[1]
n = n + redis.call('ZLEXCOUNT', K.routed, '[' .. own .. '|', '(' .. own .. '}')
for _, line in ipairs(given.lines) do
  n = n + redis.call('ZLEXCOUNT', K.routed, '[r' .. line .. '|', '(r' .. line .. '}')
end
local out = {}
local mine = redis.call('ZRANGEBYLEX', K.routed, '[' .. own .. '|', '(' .. own .. '}', 'LIMIT', '0', ARGV[4])
if #mine > 0 then
  local ids = {}
  for i, member in ipairs(mine) do ids[i] = id_of(string.sub(member, #own + 2)) end
  local metas = redis.call('HMGET', K.meta, unpack(ids))
  for i, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = metas[i]
  end
end
return plain('ok', 1, n, unpack(out))
