-- batch_cancel.lua: cancels a batch, in bounded steps. The first call marks
-- it canceled: from then on none of its jobs is admitted, claimed, or put
-- back in line. Each call cancels at most limit of its ready and scheduled
-- jobs, in member order after a cursor; reserved ones finish normally, and
-- ones that moved, or are moving, to the queue's breach queue run on there.
-- Calling again resumes; canceling a batch that ended in completion answers
-- invalid_state.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, members, claims, holding, people, waiting, outbox,
--            drafts, sla, late, readydue, moving, returns, routed, routes,
--            fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> batch id
-- ARGV[3] -> cursor: the last member a previous call looked at ("" to start)
-- ARGV[4] -> limit
-- ARGV[5] -> actor: the user canceling
-- Output: {"batch_not_found"}, {"invalid_state"}, or {"ok", batch JSON,
--         cursor to continue from ("" when done)}
clock(ARGV[1])
local bid, after, limit = ARGV[2], ARGV[3], tonumber(ARGV[4])
local b = batch(bid)
if not b then return answer('batch_not_found') end
if b.state == 'completed' or b.state == 'completed_with_failures' then return answer('invalid_state') end
b.state = 'canceled'

local from = '[' .. bid .. '|'
if after ~= '' then from = '(' .. after end
local members = redis.call('ZRANGEBYLEX', K.members, from, '(' .. bid .. '}', 'LIMIT', 0, limit + 1)
for i = 1, math.min(#members, limit) do
  local id = string.sub(members[i], #bid + 2)
  local m = load(id)
  -- One on its way to the breach queue (sla.lua) is that queue's to end.
  if m and (m.state == 'ready' or m.state == 'scheduled') and
    not (m.due_at and redis.call('HEXISTS', K.moving, id) == 1) then
    finish(id, m, 'canceled', 'canceled', ARGV[5])
    store(id, m)
  end
end
local cursor = ''
if #members > limit then cursor = members[limit] end
settle(bid, b)
return answer('ok', cjson.encode(b), cursor)
