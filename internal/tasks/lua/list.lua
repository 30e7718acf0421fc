-- list.lua: one page of an index, in index order, after a cursor. Reads only.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload
-- ARGV[1] -> state whose index to read (ready, scheduled, reserved, ...)
-- ARGV[2] -> page size
-- ARGV[3] -> cursor score (empty: from the start)
-- ARGV[4] -> cursor id: the page starts after (score, id)
-- ARGV[5] -> "payloads" to answer each job's payload, else none
-- Output: {"queue_not_found"}, or {"ok", more (0|1), then per job: id, score, metadata,
--         payload (or false)}
if redis.call('EXISTS', K.conf) == 0 then return plain('queue_not_found') end
local index = INDEX[ARGV[1]]
local limit = tonumber(ARGV[2])
local after_score, after_id = tonumber(ARGV[3]), ARGV[4]

-- after reports whether (score, id) sorts after the cursor, as a sorted set
-- orders members: by score, then bytewise by member (Lua's own string
-- comparison follows the server's locale, so compare bytes here).
local function after(score, id)
  if score ~= after_score then return score > after_score end
  for i = 1, math.min(#id, #after_id) do
    local x, y = id:byte(i), after_id:byte(i)
    if x ~= y then return x > y end
  end
  return #id > #after_id
end

local start = 0
if after_score then
  local s = redis.call('ZSCORE', index, after_id)
  if s and tonumber(s) == after_score then
    start = redis.call('ZRANK', index, after_id) + 1
  else
    -- The cursor's job left the index: binary search for the first job
    -- after it, O(log n) probes however many jobs share its score.
    local lo, hi = 0, redis.call('ZCARD', index)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local probe = redis.call('ZRANGE', index, mid, mid, 'WITHSCORES')
      if after(tonumber(probe[2]), probe[1]) then hi = mid else lo = mid + 1 end
    end
    start = lo
  end
end

local out = {0}
local page = redis.call('ZRANGE', index, start, start + limit, 'WITHSCORES')
for i = 1, math.min(#page, 2 * limit), 2 do
  local id = page[i]
  table.insert(out, id)
  table.insert(out, page[i + 1])
  table.insert(out, redis.call('HGET', K.meta, id))
  if ARGV[5] == 'payloads' then
    table.insert(out, redis.call('HGET', K.payload, id))
  else
    table.insert(out, false)
  end
end
if #page > 2 * limit then out[1] = 1 end
return plain('ok', unpack(out))
