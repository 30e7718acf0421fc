-- sla.lua: handles at most ARGV[2] of the moments of due times that came
-- (K.sla, lib.lua): a job whose warn point came is at risk, filed in
-- K.late and watched until its due time; one whose due time came is
-- breached, and, if the queue's breach_priority is above its own, raised
-- to it, keeping its age (its history entry says so, as its reason). Each
-- is a history entry and a transition of the job in the state it is in.
-- If the queue has a breach queue, a breached job that waits (ready or
-- scheduled) leaves the line (a slot of its batch comes free) and is
-- filed in K.moving, to be made in that queue and then deleted here
-- (move_in.lua, move_out.lua).
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, batches, batchdone, parked, waiting,
--            outbox, sla, late, readydue, moving, routed, routes, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> limit
-- ARGV[3] -> strict priority step in ms, used when the queue sets no ageing
-- Output: {"queue_not_found"}, or {"ok", more (1 or 0), moments handled}
local now = clock(ARGV[1])
local limit = tonumber(ARGV[2])
local c = settings('aging_ms', 'breach_priority')
if not c then return answer('queue_not_found') end
-- The breach queue, read at the first breach: most looks find none.
local elsewhere = nil
local came = redis.call('ZRANGEBYSCORE', K.sla, '-inf', int(now), 'WITHSCORES', 'LIMIT', '0', int(limit + 1))
local handled = math.min(#came / 2, limit)
for i = 1, handled do
  local id = came[2 * i - 1]
  local m = load(id)
  -- A reserved job's transitions name its holder, who is told.
  local holder = m and m.state == 'reserved' and m.reserved_by or nil
  if not (m and m.due_at) or m.finished_at then
    -- Not to be watched (finish takes a job out; this never comes).
    redis.call('ZREM', K.sla, id)
  elseif now < m.due_at then
    redis.call('ZADD', K.sla, int(m.due_at), id)
    redis.call('ZADD', K.late, int(m.due_at), id)
    record(id, m, 'at_risk', m.state, m.state, 'system', holder)
    store(id, m)
  else
    -- A job whose warn point and due time both came (the cron job was
    -- away, or they are one) is at risk and breached at once.
    if tonumber(came[2 * i]) == m.warn_at then record(id, m, 'at_risk', m.state, m.state, 'system', holder) end
    redis.call('ZREM', K.sla, id)
    redis.call('ZADD', K.late, int(m.due_at), id)
    local raise, reason = (c.breach_priority or 0) - m.priority, nil
    if raise > 0 then
      reason = 'priority raised to ' .. int(c.breach_priority)
      local step = c.aging_ms
      if step == nil or step <= 0 then step = tonumber(ARGV[3]) end
      -- A ready job moves up its line, or its place among its batch's
      -- parked jobs: each holds its rank.
      local lined = m.state == 'ready' and out_of_line(id, m)
      local parked = m.state == 'ready' and not lined
      if parked then redis.call('ZREM', K.parked, parked_member(id, m)) end
      m.priority, m.rank = m.priority + raise, m.rank - raise * step
      if parked then redis.call('ZADD', K.parked, '0', parked_member(id, m)) end
      if lined then line_up(id, m) end
    end
    record(id, m, 'breached', m.state, m.state, 'system', holder, reason)
    store(id, m)
    if elsewhere == nil then elsewhere = redis.call('HGET', K.conf, 'breach_queue') or '' end
    if elsewhere ~= '' and (m.state == 'ready' or m.state == 'scheduled') then
      local b = batch(m.batch)
      unfile(id, m, b)
      if b then settle(m.batch, b) end
      redis.call('HSET', K.moving, id, elsewhere)
    end
  end
end
return answer('ok', #came / 2 > limit and 1 or 0, handled)
