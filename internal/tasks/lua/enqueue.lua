-- enqueue.lua: adds up to 1000 jobs at once, all or nothing, optionally to a
-- batch that it creates or that is still open.
-- BUDGET enqueue 1 job: 10 commands
-- BUDGET enqueue 100 jobs: 10 commands
--   (on a standing plain queue, lib.lua's The oldest wait, no batch, no
--   idempotency key; TestCommandBudgets holds these: TIME, the settings'
--   HMGET, the new jobs' ZADD ready, HSET payload and HSET meta, one per
--   key whatever their number, and the counts' five ZCARDs)
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, idem, batches, batchindex, batchdone,
--            parked, members, waiting, outbox, sla, readydue, moved, routed,
--            routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> strict priority step in ms, used when the queue sets no ageing
-- ARGV[3] -> batch id (empty: the jobs belong to no batch)
-- ARGV[4] -> the new batch's record as JSON (title, priority,
--            max_concurrent, state); empty: add to the existing open batch
-- ARGV[5] -> actor: the user enqueuing
-- ARGV[6] -> number of jobs n; then per job: id, title, priority, payload
--            JSON, and "" when the job has none of the rest (each 0 or
--            empty), else "+" and the rest, 10 values: run_at ms (0:
--            none), delay ms (0: none), lease_seconds (0: queue's),
--            max_attempts (0: queue's), due_at ms (0: none), due in ms
--            (0: none; with neither, the queue's sla_seconds, if any, say
--            when the job is due), skills asked, canonical (empty: none),
--            the people it is routed to, one per line (empty: none), in
--            how many ms they no longer alone may claim it (0: never: one
--            person, assigned), idempotency key (empty: none)
-- A new batch whose jobs all exist already (idempotency keys) is a repeat
-- of the request that made them: if they are all of one batch, nothing is
-- created and that batch is the answer; otherwise it is refused. A batch
-- request with some of its jobs made already, outside that batch, is
-- refused too: those jobs would be answered as the batch's, and are not.
-- Output: {"queue_not_found"}, {"batch_not_found"}, {"invalid_state"} (batch
-- sealed, or a repeat that matches no one batch), {"key_elsewhere"}, or
-- {"ok", batch id or "",
-- batch JSON or "", then per job: "created"|"existing", id, metadata,
-- payload ("" when created); or "moved", id, the queue it moved to (the
-- key's job missed its due time and moved: move_out.lua), ""}
local now = clock(ARGV[1])
local c, read = settings('aging_ms', 'lease_seconds', 'max_attempts', 'sla_seconds', 'warn_fraction', 'plain',
  'waiting_indexed', 'waiting_cursor')
if not c then return answer('queue_not_found') end
SEEN.plain = as_plain(read[6], read[7], read[8])
local step = c.aging_ms
if step == nil or step <= 0 then step = tonumber(ARGV[2]) end

local bid, b = ARGV[3], nil
if bid ~= '' and ARGV[4] ~= '' then
  b = cjson.decode(ARGV[4])
  b.total, b.ready, b.reserved, b.completed, b.dead, b.canceled, b.admitted = 0, 0, 0, 0, 0, 0, 0
  b.created_at = now
  BATCHES[bid] = b
elseif bid ~= '' then
  b = batch(bid)
  if not b then return answer('batch_not_found') end
  if b.state ~= 'open' then return answer('invalid_state') end
end

-- batch_of returns the batch of the job id (nil for none), here or, for
-- one that moved to another queue, as K.moved records it.
local function batch_of(id)
  local m = load(id)
  if m then return m.batch end
  local _, _, bid = moved_to(id)
  if bid ~= '' then return bid end
end

local out = {'', ''}
local existing = {}
local actor = ARGV[5]
local n = tonumber(ARGV[6])
-- Where each job's values start (ARGV[6], above), and its idempotency key.
local at, keys, a = {}, {}, 7
for i = 0, n - 1 do
  at[i] = a
  if ARGV[a + 4] == '' then
    keys[i], a = '', a + 5
  else
    keys[i], a = ARGV[a + 14], a + 15
  end
end
-- The jobs the keys made before this request, read before anything is
-- written: a batch request answers none made outside the batch as its own.
local made, found = {}, 0
for i = 0, n - 1 do
  local key = keys[i]
  made[i] = key ~= '' and redis.call('HGET', K.idem, key)
  if made[i] then
    found = found + 1
    if b and ARGV[4] == '' and batch_of(made[i]) ~= bid then return answer('key_elsewhere') end
  end
end
if b and ARGV[4] ~= '' and found > 0 and found < n then return answer('key_elsewhere') end
-- Keys given twice in this request: the job made for the first, and its
-- payload. The writes of several new jobs are gathered, made once all are
-- known: one command per key costs less than one per job, though not for
-- one job.
local made_now, bodies = {}, {}
-- Most of a job's numbers are 0, for none; several jobs' numbers, most of
-- them alike (a priority), are read once per call (num, lib.lua).
local function number(s)
  if s == '0' then return 0 end
  return num(s)
end
if n > 1 then
  gather()
  remember()
end
local routed = false
for i = 0, n - 1 do
  local a = at[i]
  local id, title, priority, body = ARGV[a], ARGV[a + 1], number(ARGV[a + 2]), ARGV[a + 3]
  local run_at, delay, lease, attempts, due_at, due_in, skills, route_to, fallback_in = 0, 0, 0, 0, 0, 0, '', '', 0
  if ARGV[a + 4] ~= '' then
    run_at, delay = number(ARGV[a + 5]), number(ARGV[a + 6])
    lease, attempts = number(ARGV[a + 7]), number(ARGV[a + 8])
    due_at, due_in = number(ARGV[a + 9]), number(ARGV[a + 10])
    skills, route_to, fallback_in = ARGV[a + 11], ARGV[a + 12], number(ARGV[a + 13])
  end
  local key = keys[i]
  local first = made[i] or (key ~= '' and made_now[key])
  if first then
    table.insert(existing, first)
    local meta = nil
    if made[i] then meta = redis.call('HGET', K.meta, first) end
    table.insert(out, meta == false and 'moved' or 'existing')
    table.insert(out, first)
    if meta == false then
      table.insert(out, moved_to(first) or '')
      table.insert(out, '')
    elseif made[i] then
      table.insert(out, meta)
      table.insert(out, redis.call('HGET', K.payload, first))
    else
      table.insert(out, LOADED[first].raw)
      table.insert(out, bodies[first])
    end
  else
    local due = now
    if delay > 0 then due = now + delay elseif run_at > now then due = run_at end
    if lease <= 0 then lease = c.lease_seconds end
    if attempts <= 0 then attempts = c.max_attempts end
    local m = {
      state = 'ready', title = title, priority = priority, attempts = 0,
      max_attempts = attempts, lease_seconds = lease, created_at = now,
      run_at = due, rank = due - priority * step, hist_n = 0, history = '',
    }
    LOADED[id] = m
    -- The job's own due time, else the queue's SLA's; at risk once the
    -- queue's warn fraction of the time until then has passed.
    if due_at == 0 and due_in > 0 then due_at = now + due_in end
    if due_at == 0 and (c.sla_seconds or 0) > 0 then due_at = now + c.sla_seconds * 1000 end
    if due_at > 0 then
      m.due_at = due_at
      m.warn_at = now + math.floor((c.warn_fraction or DEFAULT_WARN_FRACTION) * math.max(due_at - now, 0))
      write('ZADD', K.sla, int(m.warn_at), id)
    end
    if skills ~= '' then m.skills = skills end
    if route_to ~= '' then
      m.route_to = route_to
      if fallback_in > 0 then
        m.fallback_at = now + fallback_in
        note_fallback(id, m.fallback_at)
      end
    end
    if m.skills or m.route_to then routed = true end
    if key ~= '' then
      m.idempotency_key = key
      write('HSET', K.idem, key, id)
      made_now[key], bodies[id] = id, body
    end
    if due > now then m.state = 'scheduled' end
    if b then
      m.batch = bid
      b.total = b.total + 1
      b[BUCKET[m.state]] = b[BUCKET[m.state]] + 1
      write('ZADD', K.members, '0', bid .. '|' .. id)
    end
    record(id, m, 'enqueued', nil, m.state, actor)
    file(id, m, m.state == 'scheduled' and due or m.rank, b)
    write('HSET', K.payload, id, body)
    local o = #out
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 'created', id, store(id, m), ''
  end
end
flush()
if routed then redis.call('HSET', K.conf, 'routed', '1') end
if b and ARGV[4] ~= '' and n > 0 and #existing == n then
  bid = batch_of(existing[1])
  b = batch(bid)
  for _, id in ipairs(existing) do
    if not b or batch_of(id) ~= bid then return answer('invalid_state') end
  end
elseif b then
  if ARGV[4] ~= '' then redis.call('ZADD', K.batchindex, now, bid) end
  settle(bid, b)
end
if b then
  out[1], out[2] = bid, cjson.encode(b)
end
return answer('ok', unpack(out))
