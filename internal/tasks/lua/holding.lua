-- holding.lua: one person's live reservations of the queue, without their
-- payloads (a page lists them; it never walks everyone's); and what they
-- may claim there: how many jobs (and free seats of jobs others hold),
-- and the first of those routed to them
-- by name (assigned, or preferring them). Reads only.
-- KEYS    -> conf, ready, meta, holding, routed
-- ARGV[1] -> the person
-- ARGV[2] -> at most this many reservations
-- ARGV[3], ARGV[4] -> the skills lines they may take from, as claim.lua's
--            ARGV[9] and ARGV[10]
-- ARGV[5] -> at most this many of their own jobs
-- Output: {"routes"} (as claim.lua's), or {"ok", how many reservations,
--         then per reservation: id, metadata; then routed (1 if the queue
--         ever had a routed job, else 0), how many jobs they may claim,
--         then per job of their own: id, metadata}
local conf = redis.call('HMGET', K.conf, 'routed', 'routes_v', 'seats', 'overlap_at_once')
local given = given_lines(ARGV[3], ARGV[4])
local routed = conf[1] == '1'
if routed and routes_stale(given, conf[2]) then return plain('routes') end

local out = {}
-- ids, then their metadata, after out's n values so far.
local function jobs(ids)
  if #ids == 0 then return {} end
  local metas = redis.call('HMGET', K.meta, unpack(ids))
  for i, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = metas[i]
  end
  return metas
end
local held = redis.call('ZRANGEBYLEX', K.holding, '[' .. ARGV[1] .. '\n', '(' .. ARGV[1] .. '\11',
  'LIMIT', '0', ARGV[2])
local ids = {}
for i, member in ipairs(held) do ids[i] = string.sub(member, #ARGV[1] + 2) end
out[1] = #ids
local metas = jobs(ids)
if not routed then
  out[#out + 1] = 0
  out[#out + 1] = redis.call('ZCARD', INDEX.ready)
  return plain('ok', unpack(out))
end
-- The open line, then each of theirs (lib.lua, Routing).
local own = 'r@' .. ARGV[1]
local n = redis.call('ZCOUNT', INDEX.ready, '-inf', '(' .. int(ROUTED - 1e14))
  + redis.call('ZLEXCOUNT', K.routed, '[' .. own .. '|', '(' .. own .. '}')
for _, line in ipairs(given.lines) do
  n = n + redis.call('ZLEXCOUNT', K.routed, '[r' .. line .. '|', '(r' .. line .. '}')
end
-- And the free seats of jobs others hold (lib.lua, Seats), but of those
-- the person holds.
if conf[3] == '1' and conf[4] == '1' then
  local read = {}
  for _, line in ipairs({'', '@' .. ARGV[1], unpack(given.lines)}) do
    local seats = 'r' .. SEAT_LINE .. line
    read[seats] = true
    n = n + redis.call('ZLEXCOUNT', K.routed, '[' .. seats .. '|', '(' .. seats .. '}')
  end
  for _, raw in ipairs(metas) do
    local seated = raw and parse(raw).seated
    for line in string.gmatch(seated or '', '([^\n|]+)|[^\n]*') do
      if read[line] then n = n - 1 end
    end
  end
end
out[#out + 1] = 1
out[#out + 1] = n
local mine = {}
for i, member in ipairs(redis.call('ZRANGEBYLEX', K.routed, '[' .. own .. '|', '(' .. own .. '}', 'LIMIT', '0', ARGV[5])) do
  mine[i] = id_of(string.sub(member, #own + 2))
end
jobs(mine)
return plain('ok', unpack(out))
