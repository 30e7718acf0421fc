-- tally.lua: the queue's tallies of work by person (lib.lua, tally) of the
-- last ARGV[2] days, today included. Reads only.
-- KEYS    -> people
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> days
-- Output: {"ok", today (days since the Unix epoch, UTC), {person, tally,
--         ...}}: each of each person's counters of those days (lib.lua,
--         count) as "<person>\n=<what>" and its value; and each tally a
--         store of format 3 kept of those days (tally.go, decodeTally), as
--         "<person>", and "<person>\nr" for a review tally
local today = math.floor(clock(ARGV[1]) / 86400000)
local first = today - tonumber(ARGV[2]) + 1
local out = {}
local all = redis.call('HGETALL', K.people)
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  local day
  if string.find(field, '\n=', 1, true) then
    day = math.floor(tonumber(value) / TALLY_DAY)
  else
    day = select(2, cmsgpack.unpack_limit(value, 1, 0))
  end
  if day >= first and day <= today then
    out[#out + 1] = string.match(field, '\n(.*)$')
    out[#out + 1] = value
  end
end
return plain('ok', today, out)
