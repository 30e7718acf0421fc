-- draft.lua: the holder saves what they have typed on the job so far, as
-- its live draft (lib.lua, Drafts), replacing the one saved before. The
-- reservation's first save, the one that finds no live draft, adds a
-- "drafted" entry to the job's history; it is no change of state, so the
-- call has no transition.
-- KEYS    -> conf, meta, drafts, routed, routes, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the user acting
-- ARGV[5] -> the draft: a JSON object
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"}, or {"ok",
--         when it was saved in ms}
local now = clock(ARGV[1])
local id, op = ARGV[2], ARGV[4]
local m = load(id)
if not m then return plain('not_found') end
local refused = fence(m, ARGV[3], op)
if refused then return plain(refused) end
if redis.call('HEXISTS', K.drafts, draft_field(id, m, op)) == 0 then
  append_entry(m, 'drafted', op, 'reserved', 'reserved', m.attempts + 1, m.deadline)
  store(id, m)
end
redis.call('HSET', K.drafts, draft_field(id, m, op), cmsgpack.pack(op, now, ARGV[5]))
return plain('ok', now)
