-- list.lua: one page of an index, in index order or reversed, after a
-- cursor, within a range of scores. Reads only.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, late
-- ARGV[1] -> state whose index to read (ready, scheduled, reserved, ...),
--            or "late": the jobs past their warn point, by due time
-- ARGV[2] -> page size
-- ARGV[3] -> cursor score (empty: from the start)
-- ARGV[4] -> cursor id: the page starts after (score, id), in the order read
-- ARGV[5] -> "payloads" to answer each job's payload, else none
-- ARGV[6] -> "results" to answer each job's result, else none
-- ARGV[7] -> "desc" to read the index from its end (highest score first)
-- ARGV[8] -> lowest score to list (empty: no bound), inclusive
-- ARGV[9] -> highest score to list (empty: no bound), inclusive
-- Output: {"queue_not_found"}, or {"ok", more (0|1), then per job: id, score, metadata,
--         payload (or false), result (or false)}
if redis.call('EXISTS', K.conf) == 0 then return plain('queue_not_found') end
local index = INDEX[ARGV[1]]
if ARGV[1] == 'late' then index = K.late end
local limit = tonumber(ARGV[2])
local after_score, after_id = tonumber(ARGV[3]), ARGV[4]
local desc = ARGV[7] == 'desc'

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

-- The jobs to list are the ranks lo..hi of the index, ascending: those in
-- the range of scores, then those past the cursor in the order read.
local lo, hi = 0, redis.call('ZCARD', index) - 1
if ARGV[8] ~= '' then lo = redis.call('ZCOUNT', index, '-inf', '(' .. ARGV[8]) end
if ARGV[9] ~= '' then hi = redis.call('ZCOUNT', index, '-inf', ARGV[9]) - 1 end
if after_score then
  -- first: the rank of the first job after the cursor; at: the cursor's
  -- own rank when its job is still there, else first.
  local first, at
  local s = redis.call('ZSCORE', index, after_id)
  if s and tonumber(s) == after_score then
    at = redis.call('ZRANK', index, after_id)
    first = at + 1
  else
    -- The cursor's job left the index: binary search for the first job
    -- after it, O(log n) probes however many jobs share its score.
    local l, h = 0, redis.call('ZCARD', index)
    while l < h do
      local mid = math.floor((l + h) / 2)
      local probe = redis.call('ZRANGE', index, mid, mid, 'WITHSCORES')
      if after(tonumber(probe[2]), probe[1]) then h = mid else l = mid + 1 end
    end
    first, at = l, l
  end
  if desc then hi = math.min(hi, at - 1) else lo = math.max(lo, first) end
end

local out = {0}
if lo > hi then return plain('ok', unpack(out)) end
local from, to = lo, math.min(hi, lo + limit - 1)
if desc then from, to = math.max(lo, hi - limit + 1), hi end
if to - from + 1 < hi - lo + 1 then out[1] = 1 end
local page = redis.call('ZRANGE', index, from, to, 'WITHSCORES')
local first, last, step = 1, #page - 1, 2
if desc then first, last, step = #page - 1, 1, -2 end
for i = first, last, step do
  local id = page[i]
  table.insert(out, id)
  table.insert(out, page[i + 1])
  table.insert(out, redis.call('HGET', K.meta, id))
  if ARGV[5] == 'payloads' then
    table.insert(out, redis.call('HGET', K.payload, id))
  else
    table.insert(out, false)
  end
  if ARGV[6] == 'results' then
    table.insert(out, redis.call('HGET', K.result, id))
  else
    table.insert(out, false)
  end
end
return plain('ok', unpack(out))
