-- holding.lua: one person's live reservations of the queue, without their
-- payloads (a page lists them; it never walks everyone's). Reads only.
-- KEYS    -> meta, holding
-- ARGV[1] -> the holder
-- ARGV[2] -> at most this many
-- Output: {"ok", then per job: id, metadata}
local held = redis.call('ZRANGEBYLEX', K.holding, '[' .. ARGV[1] .. '\n', '(' .. ARGV[1] .. '\11',
  'LIMIT', '0', ARGV[2])
local out = {}
if #held > 0 then
  local ids = {}
  for i, member in ipairs(held) do ids[i] = string.sub(member, #ARGV[1] + 2) end
  local metas = redis.call('HMGET', K.meta, unpack(ids))
  for i, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = metas[i]
  end
end
return plain('ok', unpack(out))
