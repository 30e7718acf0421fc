-- batch_seal.lua: seals an open batch: no job may be added any more, and it
-- completes when its last job ends. Sealing a sealed or ended batch changes
-- nothing.
-- KEYS    -> conf, ready, scheduled, reserved, dead, meta, payload, result,
--            batches, batchdone, parked, waiting, outbox, readydue, routed,
--            routes, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> batch id
-- Output: {"batch_not_found"}, or {"ok", batch JSON}
clock(ARGV[1])
local bid = ARGV[2]
local b = batch(bid)
if not b then return answer('batch_not_found') end
if b.state == 'open' then
  b.state = 'sealed'
  settle(bid, b)
end
return answer('ok', cjson.encode(b))
