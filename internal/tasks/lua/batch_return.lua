-- batch_return.lua: tells a batch of this queue how one of its jobs that
-- moved to another queue stands there (move_out.lua): the counter that
-- counts it moves from where K.away says to the one given, and the batch
-- may end (or reopen, when a dead job is requeued there). Told again,
-- nothing changes.
-- KEYS    -> conf, ready, scheduled, reserved, dead, meta, payload, result,
--            batches, batchdone, parked, waiting, outbox, readydue, away,
--            routed, routes, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> batch id
-- ARGV[3] -> job id
-- ARGV[4] -> the counter that counts it now: "moved" while it is
--            unfinished there, else the state it ended in
-- Output: {"ok", changed (1 or 0)}
clock(ARGV[1])
local bid, id, now_in = ARGV[2], ARGV[3], ARGV[4]
local was = redis.call('HGET', K.away, id)
if not was or was == now_in then return answer('ok', 0) end
redis.call('HSET', K.away, id, now_in)
local b = batch(bid)
if b then
  b[was], b[now_in] = b[was] - 1, b[now_in] + 1
  settle(bid, b)
end
return answer('ok', 1)
