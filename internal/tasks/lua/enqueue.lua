-- enqueue.lua: adds up to 1000 jobs at once, all or nothing.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> strict priority step in ms, used when the queue sets no ageing
-- ARGV[3] -> number of jobs n; then 9 values per job:
--            id, title, priority, run_at ms (0: none), delay ms (0: none),
--            lease_seconds (0: queue's), max_attempts (0: queue's),
--            idempotency key (empty: none), payload JSON
-- Output: {"queue_not_found"}, or {"ok", then per job: "created"|"existing", id, meta JSON, payload ("" when created)}
local now = clock(ARGV[1])
local c = settings()
if not c then return {'queue_not_found'} end
local step = c.aging_ms
if step == nil or step <= 0 then step = tonumber(ARGV[2]) end

local out = {'ok'}
local n = tonumber(ARGV[3])
for i = 0, n - 1 do
  local b = 4 + i * 9
  local id, title, priority = ARGV[b], ARGV[b + 1], tonumber(ARGV[b + 2])
  local run_at, delay = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local lease, attempts = tonumber(ARGV[b + 5]), tonumber(ARGV[b + 6])
  local key, body = ARGV[b + 7], ARGV[b + 8]
  local first = key ~= '' and redis.call('HGET', K.idem, key)
  if first then
    table.insert(out, 'existing')
    table.insert(out, first)
    table.insert(out, redis.call('HGET', K.meta, first))
    table.insert(out, redis.call('HGET', K.payload, first))
  else
    local due = now
    if delay > 0 then due = now + delay elseif run_at > now then due = run_at end
    if lease <= 0 then lease = c.lease_seconds end
    if attempts <= 0 then attempts = c.max_attempts end
    local m = {
      state = 'ready', title = title, priority = priority, attempts = 0,
      max_attempts = attempts, lease_seconds = lease, created_at = now,
      run_at = due, rank = due - priority * step,
    }
    if key ~= '' then
      m.idempotency_key = key
      redis.call('HSET', K.idem, key, id)
    end
    if due > now then
      m.state = 'scheduled'
      redis.call('ZADD', INDEX.scheduled, due, id)
    else
      redis.call('ZADD', INDEX.ready, m.rank, id)
    end
    redis.call('HSET', K.payload, id, body)
    store(id, m)
    table.insert(out, 'created')
    table.insert(out, id)
    table.insert(out, cjson.encode(m))
    table.insert(out, '')
  end
end
return out
