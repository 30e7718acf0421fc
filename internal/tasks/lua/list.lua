-- list.lua: one page of an index, in index order, after a cursor. Reads only.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> state whose index to read (ready, scheduled, reserved, ...)
-- ARGV[2] -> page size
-- ARGV[3] -> cursor score (empty: from the start)
-- ARGV[4] -> cursor id: the page starts after (score, id)
-- Output: {"ok", more (0|1), then per job: id, score, meta JSON, payload}
local index = INDEX[ARGV[1]]
local limit = tonumber(ARGV[2])
local after_score, after_id = tonumber(ARGV[3]), ARGV[4]

-- bytes_le compares like a sorted set orders equal scores (memcmp); Lua's
-- own comparison follows the server's locale.
local function bytes_le(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end

local start = 0
if after_score then
  local s = redis.call('ZSCORE', index, after_id)
  if s and tonumber(s) == after_score then
    start = redis.call('ZRANK', index, after_id) + 1
  else
    -- The cursor's job left the index: restart at its score and step over
    -- the equal-score jobs that sort before it.
    start = redis.call('ZCOUNT', index, '-inf', '(' .. ARGV[3])
  end
end

local out, found = {'ok', 0}, 0
while found <= limit do
  local page = redis.call('ZRANGE', index, start, start + limit, 'WITHSCORES')
  if #page == 0 then break end
  for i = 1, #page, 2 do
    local id, score = page[i], tonumber(page[i + 1])
    if not (after_score and score == after_score and bytes_le(id, after_id)) then
      found = found + 1
      if found > limit then
        out[2] = 1
        break
      end
      local meta = redis.call('HGET', K.meta, id)
      table.insert(out, id)
      table.insert(out, page[i + 1])
      table.insert(out, meta)
      table.insert(out, redis.call('HGET', K.payload, id))
    end
  end
  start = start + #page / 2
end
return out
