-- tally.lua: the queue's tallies of work by person (lib.lua, tally) of the
-- last ARGV[2] days, today included. Reads only.
-- KEYS    -> people
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> days
-- Output: {"ok", today (days since the Unix epoch, UTC), {person, tally,
--         ...}}: each person's tally of each of those days they have one,
--         and their review tally ("<person>\nr": lib.lua, review_tally)
local today = math.floor(clock(ARGV[1]) / 86400000)
local first = today - tonumber(ARGV[2]) + 1
local out = {}
local all = redis.call('HGETALL', K.people)
for i = 1, #all, 2 do
  local _, day = cmsgpack.unpack_limit(all[i + 1], 1, 0)
  if day >= first and day <= today then
    out[#out + 1] = string.match(all[i], '\n(.*)$')
    out[#out + 1] = all[i + 1]
  end
end
return plain('ok', today, out)
