-- claim.lua: reserves the best-ranked ready job the operator has not skipped.
-- First, bounded, it reclaims expired reservations and promotes due scheduled
-- jobs, so an abandoned or due job is claimable at once, cron or no cron.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> operator
-- ARGV[3] -> fresh reservation token
-- ARGV[4] -> most expired reservations to reclaim and scheduled jobs to promote
-- ARGV[5] -> most skipped jobs to look past
-- Output: {"queue_not_found"}, {"empty"}, or {"ok", id, metadata, payload}
local now = clock(ARGV[1])
local max_hold = redis.call('HGET', K.conf, 'max_hold_seconds')
if not max_hold then return {'queue_not_found'} end
local budget = tonumber(ARGV[4])
-- Most claims find nothing expired or due: a count, answered as a bare
-- integer, is the cheapest way to know.
local until_now = int(now)
if redis.call('ZCOUNT', INDEX.reserved, '-inf', until_now) > 0 then reclaim(now, budget) end
if redis.call('ZCOUNT', INDEX.scheduled, '-inf', until_now) > 0 then promote(now, budget) end

local op = ARGV[2]
local skipped = tonumber(redis.call('HGET', K.skipcount, op) or '0')
-- Only jobs this operator skipped can stand in front of the one to claim,
-- so the first skipped+1 ready jobs always hold it (if any does).
local ahead = math.min(skipped, tonumber(ARGV[5]))
local function best()
  for _, candidate in ipairs(redis.call('ZRANGE', INDEX.ready, '0', int(ahead))) do
    if skipped == 0 or redis.call('SISMEMBER', K.skips, op .. '\n' .. candidate) == 0 then
      return candidate
    end
  end
end

-- A job of a batch being canceled may still be in line (the cancel goes in
-- bounded steps): cancel it on the way, a bounded number per claim.
local id, m
for _ = 0, budget do
  id = best()
  if not id then return {'empty'} end
  m = load(id)
  local b = batch(m.batch)
  if not (b and b.state == 'canceled') then break end
  finish(id, m, 'canceled', now)
  store(id, m)
  id = nil
end
if not id then return {'empty'} end

m.reserved_by, m.reserved_at, m.token, m.extensions = op, now, ARGV[3], 0
-- A job's own lease never outlasts the queue's cap on a reservation.
m.deadline = now + math.min(m.lease_seconds, tonumber(max_hold)) * 1000
move(id, m, 'reserved', m.deadline)
return reply(id, store(id, m))
