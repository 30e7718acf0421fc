-- claim.lua: reserves the best-ranked ready job the operator has not skipped
-- (or, given a job id, that job if it is in line and not skipped by them).
-- First, bounded, it reclaims expired reservations and promotes due
-- scheduled jobs, so an abandoned or due job is claimable at once, cron or
-- no cron. A claim with an idempotency key that names a live reservation of
-- the operator answers that reservation again.
-- KEYS    -> conf, ready, scheduled, reserved, dead, canceled, meta,
--            payload, skips, skipcount, batches, batchdone, parked, claims
--            (of the queue's keys, see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> operator
-- ARGV[3] -> fresh reservation token
-- ARGV[4] -> most expired reservations to reclaim and scheduled jobs to promote
-- ARGV[5] -> most skipped jobs to look past
-- ARGV[6] -> idempotency key (empty: none)
-- ARGV[7] -> job id to claim (empty: the best-ranked)
-- ARGV[8] -> "1": only answer the live reservation named by the key again,
--            claim nothing new (empty: claim)
-- Output: {"queue_not_found"}, {"empty"}, {"not_ready"} (the job asked for
--         is not in line for this operator), or {"ok", id, metadata, payload}
local now = clock(ARGV[1])
local max_hold = redis.call('HGET', K.conf, 'max_hold_seconds')
if not max_hold then return answer('queue_not_found') end
local op, key, wanted = ARGV[2], ARGV[6], ARGV[7]
if key ~= '' then
  local prior = redis.call('HGET', K.claims, op .. '\n' .. key)
  if prior then
    local pm = load(prior)
    if pm and pm.state == 'reserved' and pm.reserved_by == op and pm.deadline > now then
      return reply(prior, pm.raw)
    end
  end
end
if ARGV[8] == '1' then return answer('empty') end
local budget = tonumber(ARGV[4])
-- Most claims find nothing expired or due: a count, answered as a bare
-- integer, is the cheapest way to know.
local until_now = int(now)
if redis.call('ZCOUNT', INDEX.reserved, '-inf', until_now) > 0 then reclaim(budget) end
if redis.call('ZCOUNT', INDEX.scheduled, '-inf', until_now) > 0 then promote(budget) end

local skipped = tonumber(redis.call('HGET', K.skipcount, op) or '0')
local function skipped_by_op(candidate)
  return skipped > 0 and redis.call('SISMEMBER', K.skips, op .. '\n' .. candidate) == 1
end
-- Only jobs this operator skipped can stand in front of the one to claim,
-- so the first skipped+1 ready jobs always hold it (if any does).
local ahead = math.min(skipped, tonumber(ARGV[5]))
local function best()
  if wanted ~= '' then
    if redis.call('ZSCORE', INDEX.ready, wanted) and not skipped_by_op(wanted) then return wanted end
    return nil
  end
  for _, candidate in ipairs(redis.call('ZRANGE', INDEX.ready, '0', int(ahead))) do
    if not skipped_by_op(candidate) then return candidate end
  end
end

-- A job of a batch being canceled may still be in line (the cancel goes in
-- bounded steps): cancel it on the way, a bounded number per claim.
local id, m
for _ = 0, budget do
  id = best()
  if not id then break end
  m = load(id)
  local b = batch(m.batch)
  if not (b and b.state == 'canceled') then break end
  finish(id, m, 'canceled', 'canceled', 'system')
  store(id, m)
  id = nil
end
if not id then
  if wanted ~= '' then return answer('not_ready') end
  return answer('empty')
end

m.reserved_by, m.reserved_at, m.token, m.extensions = op, now, ARGV[3], 0
-- A job's own lease never outlasts the queue's cap on a reservation.
m.deadline = now + math.min(m.lease_seconds, tonumber(max_hold)) * 1000
if key ~= '' then
  m.claim_key = key
  redis.call('HSET', K.claims, op .. '\n' .. key, id)
end
go(id, m, 'reserved', m.deadline, 'claimed', op)
return reply(id, store(id, m))
