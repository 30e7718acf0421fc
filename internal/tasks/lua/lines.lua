-- lines.lua: the lines of routed jobs in line (lib.lua, Routing) that hold
-- a job, at most ARGV[1] of them: each one's name ("@<person>" or
-- "+<skills>"), how many jobs wait in it, and its first. Reads only.
-- KEYS    -> routed, heads
-- ARGV[1] -> at most this many lines
-- Output: {"ok", then per line: name, jobs waiting, first job's id}
local out = {}
local heads = redis.call('HGETALL', K.heads)
for i = 1, #heads, 2 do
  local field = heads[i]
  -- (The review line and the seat lines are no line of routed jobs:
  -- lib.lua, Review and Seats.)
  local line = string.sub(field, 2)
  if string.sub(field, 1, 1) == 'r' and line ~= REVIEW_LINE and string.sub(line, 1, #SEAT_LINE) ~= SEAT_LINE
    and #out < 3 * tonumber(ARGV[1]) then
    out[#out + 1] = line
    out[#out + 1] = redis.call('ZLEXCOUNT', K.routed, '[' .. field .. '|', '(' .. field .. '}')
    out[#out + 1] = id_of(heads[i + 1])
  end
end
return plain('ok', unpack(out))
