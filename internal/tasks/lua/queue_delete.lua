-- queue_delete.lua: deletes an empty queue, with what is left of its
-- finished jobs and batches. A queue is empty when no job of it is ready,
-- scheduled, reserved, dead or moving to another queue, no batch of
-- another queue has yet to learn how a job that moved here ended, and
-- every batch of it has finished.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, idem, skips, skipcount, batches,
--            batchindex, batchdone, parked, members, claims, holding,
--            numbers, people, waiting, outbox, drafts, sla, late, readydue,
--            moving, moved, movedat, away, returns, routed, routes, fallback,
--            heads
-- Output: {"queue_not_found"}, {"queue_not_empty"}, or {"ok"}
if redis.call('EXISTS', K.conf) == 0 then return plain('queue_not_found') end
for _, k in ipairs({INDEX.ready, K.parked, INDEX.scheduled, INDEX.reserved, INDEX.dead}) do
  if redis.call('ZCARD', k) > 0 then return plain('queue_not_empty') end
end
-- Nor may a job be on its way out, or a batch elsewhere have yet to learn
-- how a job that moved here ended.
if redis.call('HLEN', K.moving) + redis.call('ZCARD', K.returns) > 0 then return plain('queue_not_empty') end
if redis.call('ZCARD', K.batchindex) > redis.call('ZCARD', K.batchdone) then
  return plain('queue_not_empty')
end
-- UNLINK frees the finished jobs' records (up to the queue's retention of
-- them) away from the script, so the call stays short however many.
local all = {}
for _, key in pairs(PART) do all[#all + 1] = key end
redis.call('UNLINK', unpack(all))
return plain('ok')
