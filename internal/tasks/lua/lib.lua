-- lib.lua: helpers shared by every queue script. scripts.go loads this file
-- once as the top of a Redis function library and registers each script's
-- own text as one function of it, so each script stays one atomic FCALL.
--
-- Each script is handed the keys of one queue (one hash tag, one cluster
-- slot) that it declares, and only those: scripts.go declares them per
-- script file by part (scriptKeys), and each file's KEYS header lists the
-- same parts. A key's part is what follows the hash tag, cd:{<queue>}:<part>;
-- internal/keys says what each key holds. The keys handed to the call under
-- way are K.<part>, a state's index also INDEX.<state>; a part not handed
-- is nil, so no script can touch a key it did not declare.
--
-- Scripts answer {status, effects, values...} (answer, below): a status
-- code, which scripts.go turns into a Go error in one place unless it is
-- "ok" or "empty" ("form" carries a value: complete_held); the effects of the call (the transitions it made, the
-- queue's counts after them, the batches it changed), from which
-- everything downstream is built; then the script's own values.

-- K and INDEX name the keys of the call under way, by part (one table:
-- INDEX is for the indexes of states). BATCHES caches the batch
-- records it loaded and DIRTY marks those it changed; LOADED caches the
-- jobs it loaded, so that every part of a call sees one job as one table;
-- TRANS collects the transitions it made, each packed (record), and
-- ENDED the jobs they ended, with the event of each (publish). FINISHED
-- marks the batches that finished in the call (settle), for the outbox.
local K, INDEX, BATCHES, DIRTY, LOADED, TRANS, ENDED, FINISHED = {}, {}, {}, {}, {}, {}, {}, {}

-- DEFER, while set (gather), holds the writes of file and store by key,
-- to be made as one command per key (flush). OUTBOX is conf's outbox flag
-- when the call has read it already (complete_held), else nil.
local DEFER, OUTBOX = nil, nil

-- TOPS, while writes are gathered, holds the first job each routed line
-- gets among the jobs lined up meanwhile (line_up), for flush to file in
-- K.heads at once.
local TOPS = nil

-- JOINED is set while one call makes several changes of a queue in turn
-- (many, at the end of this file): each change is one script's body, and
-- the call's effects are answered once, for them all. MARK is how many
-- transitions the changes before the one under way made. PUBLISHED is
-- set once the call appended an event to the outbox (publish).
local JOINED, MARK, PUBLISHED = false, 0, false

-- SEEN keeps, for the call under way, what it read of the queue that no
-- change it may make alters: the settings a claim reads, the outcome form
-- and its SHA-1 (complete_held), and that nothing had expired or was due
-- at NOW (claim_for), that no operator had skipped a job, and whether
-- the queue had any draft (end_draft); and the skills lines its claims
-- were last given, as read (given_lines); and whether the queue is plain,
-- which only the call's own unplain changes, there too (is_plain). A
-- joined call reads each once for all its changes. CLAIMED counts the call's claims, added to conf's
-- "claims" once (effects).
local SEEN, CLAIMED = {}, 0

-- In a call that handles many jobs (a joined call, an enqueue of
-- several), INTS keeps the numbers formatted by int, NUMS those read by
-- num, and ENQUEUED the first history entry of the jobs it enqueued, by
-- state (append_entry), so each is made once (remember); other calls
-- keep nothing, which would cost them more than it saved.
local INTS, NUMS, ENQUEUED = nil, nil, nil

local function remember()
  INTS, NUMS, ENQUEUED = {}, {}, {}
end

-- fresh starts what a call keeps of its own: a call of one script, or a
-- joined one (many). The first call binds the globals' locals
-- (bind_globals: luaGlobals, scripts.go).
local function fresh()
  if not string then bind_globals() end
  BATCHES, DIRTY, LOADED, TRANS, ENDED, FINISHED = {}, {}, {}, {}, {}, {}
  MARK, PUBLISHED, OUTBOX, SEEN, CLAIMED, INTS, NUMS, ENQUEUED = 0, false, nil, {}, 0, nil, nil, nil
end

-- begin starts a script's body with the keys it was handed, by part: a
-- call of its own, or the next change of a joined one. A joined call
-- hands every change of a script the same table, so no script writes
-- into K or INDEX (TestScriptsLeaveTheirKeys).
local function begin(keys)
  K, INDEX, DEFER, TOPS = keys, keys, nil, nil
  if JOINED then
    MARK = #TRANS
    return
  end
  fresh()
end

-- write makes the write cmd (ZADD or HSET) of one score or field a and
-- member or value b to key, or, while writes are gathered, keeps it for
-- flush: enqueue.lua makes a batch's jobs with four commands, not four per
-- job. Nothing may read a key between a gathered write and the flush.
local function write(cmd, key, a, b)
  if not DEFER then return redis.call(cmd, key, a, b) end
  local w = DEFER[key]
  if not w then
    w = {cmd}
    DEFER[key] = w
  end
  w[#w + 1], w[#w + 2] = a, b
end

-- before reports whether the place in a line a ("<score padded to 17
-- digits>|<id>", lib.lua's Routing) sorts before b, as a sorted set orders
-- its members, bytewise: by score, then id (Lua's own comparison of
-- strings follows the server's locale). An id (a ULID: 26 digits and
-- capital letters) is compared 10 characters at a time, each read as a
-- number in base 36, which orders them as their bytes do.
local function before(a, b)
  local x, y = tonumber(string.sub(a, 1, 17)), tonumber(string.sub(b, 1, 17))
  if x ~= y then return x < y end
  for i = 19, #a, 10 do
    local p, q = string.sub(a, i, i + 9), string.sub(b, i, i + 9)
    if p ~= q then
      x, y = tonumber(p, 36), tonumber(q, 36)
      if x and y and #p == #q then return x < y end
      for k = 1, math.min(#p, #q) do
        local u, v = p:byte(k), q:byte(k)
        if u ~= v then return u < v end
      end
      return #p < #q
    end
  end
  return #a < #b
end

-- gather starts gathering writes; flush makes those gathered, if any,
-- one command per key, and stops.
local function gather() DEFER, TOPS = {}, {} end

local function flush()
  local gathered, tops = DEFER, TOPS
  if not gathered then return end
  DEFER, TOPS = nil, nil
  for key, w in pairs(gathered) do redis.call(w[1], key, unpack(w, 2)) end
  local lines = {}
  for line in pairs(tops) do lines[#lines + 1] = line end
  if #lines == 0 then return end
  local firsts, better = redis.call('HMGET', K.heads, unpack(lines)), {}
  for i, line in ipairs(lines) do
    if not firsts[i] or before(tops[line], firsts[i]) then
      better[#better + 1] = line
      better[#better + 1] = tops[line]
    end
    -- A skills line that had no job may be new: then it is counted.
    if not firsts[i] and string.sub(line, 1, 2) == 'r+' and redis.call('HSETNX', K.routes, string.sub(line, 2), '1') == 1 then
      redis.call('HINCRBY', K.conf, 'routes_v', 1)
    end
  end
  if #better > 0 then
    redis.call('HSET', K.heads, unpack(better))
    for i = 1, #better, 2 do
      if SEEN.heads then SEEN.heads[better[i]] = better[i + 1] end
    end
  end
end

-- EVENT_TYPE names the outbox's event of a transition into each final
-- state (publish); a breach of a due time is job.sla_breached (record).
local EVENT_TYPE = {completed = 'job.completed', dead = 'job.dead', canceled = 'job.canceled'}

-- int formats an integral number (every score and count here is one) as a
-- command argument. A plain Lua number would be printed with %.17g, which
-- costs more than many a whole command.
local function int(n)
  local memo = INTS
  if not memo then return string.format('%d', n) end
  local s = memo[n]
  if not s then
    s = string.format('%d', n)
    memo[n] = s
  end
  return s
end

-- num reads a number written as a string (an argument, a setting), nil
-- for none.
local function num(s)
  local memo = NUMS
  if not memo or not s then return tonumber(s) end
  local n = memo[s]
  if not n then
    n = tonumber(s)
    memo[s] = n
  end
  return n
end

-- NOW is the script's one idea of the current time in ms, set by clock.
local NOW

-- clock returns now in ms: the caller's explicit value (tests), else Redis
-- TIME. Every script that changes a job's state calls it first.
local function clock(arg)
  if arg ~= nil and arg ~= '' then
    local now = tonumber(arg)
    -- A joined call's changes given times of their own (tests) look again
    -- for what expired or fell due.
    if JOINED and now ~= NOW then SEEN.clear = nil end
    NOW = now
  elseif not (JOINED and NOW) then -- the changes of a joined call share one
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end

-- settings returns the named settings of the queue as numbers, or nil if
-- the queue does not exist (every queue has all of them), and all as
-- read.
local function settings(...)
  local names = {...}
  local raw = redis.call('HMGET', K.conf, ...)
  if not raw[1] then return nil end
  local c = {}
  for i, name in ipairs(names) do c[name] = tonumber(raw[i]) end
  return c, raw
end

-- Job metadata is stored as a run of MessagePack values, one per field,
-- nil where a field is absent: no field names to keep in memory, and
-- cmsgpack builds and walks no table of its own while packing and
-- unpacking (both happen on every change of state). The fields and their
-- order are defined in Go (metaFields, internal/tasks/msgpack.go, which
-- reads them back): pack_meta and unpack_meta, defined before this file,
-- are made from that list. run_at is left out when it equals created_at.
-- reserved_by and token stay after a reservation ends, naming the last
-- holder and the token a retry of their last action would carry. The
-- job's history follows the fields: HISTORY_ENTRY values per entry
-- (record, below), hist_n entries in all since the job was made.

-- parse reads a job's metadata and history as stored.
local function parse(raw)
  local next_at, m = unpack_meta(raw)
  m.run_at = m.run_at or m.created_at
  m.hist_n = m.hist_n or 0
  m.history = next_at == -1 and '' or string.sub(raw, next_at + 1)
  m.raw = raw
  return m
end

local function load(id)
  local m = LOADED[id]
  if m then return m end
  local raw = redis.call('HGET', K.meta, id)
  if not raw then return nil end
  m = parse(raw)
  LOADED[id] = m
  return m
end

-- reseat keeps a job with overlap in the seat lines while more people may
-- hold it at once (Seats, below): store calls it on every save.
local reseat

-- store saves the job's metadata and history and returns them as stored.
local function store(id, m)
  reseat(id, m)
  local run_at = m.run_at
  if run_at == m.created_at then m.run_at = nil end
  local raw = pack_meta(m) .. m.history
  m.run_at = run_at
  write('HSET', K.meta, id, raw)
  m.raw = raw
  return raw
end

-- History. Each entry is HISTORY_ENTRY MessagePack values: ms since the job
-- was created, action, actor (nil: system), from and to state, attempt,
-- deadline in ms after the entry (nil unless the job is then reserved),
-- holder (nil unless someone else ended their reservation) and reason (nil
-- unless a failure, or a supervisor's change that was given one; for an
-- extension, the idempotency key it was asked with, if any: extend.lua). States
-- and actions are small numbers: STATE_CODE and ACTION_CODE. A job keeps
-- at most HISTORY_CAP entries: the first HISTORY_HEAD, and the latest.
-- Those five names are defined before this file, from Go (transition.go,
-- luaConstants).

-- append_entry appends one entry to the job's history (saved by the next
-- store), dropping the oldest after the first HISTORY_HEAD when full, and
-- returns it.
local function append_entry(m, action, by, from, to, attempt, deadline, other, reason)
  if m.hist_n >= HISTORY_CAP then
    -- Full: drop the oldest entry after the first HISTORY_HEAD.
    local h = m.history
    local cut = cmsgpack.unpack_limit(h, HISTORY_HEAD * HISTORY_ENTRY, 0)
    local resume = cmsgpack.unpack_limit(h, HISTORY_ENTRY, cut)
    m.history = string.sub(h, 1, cut) .. string.sub(h, resume + 1)
  end
  local entry
  -- Every job a call enqueues begins with the same entry, by its state:
  -- made now, by the actor, no attempt spent.
  local first = action == 'enqueued' and ENQUEUED and ENQUEUED[to]
  if first and first[1] == by then
    entry = first[2]
  else
    entry = cmsgpack.pack(NOW - m.created_at, ACTION_CODE[action], by,
      STATE_CODE[from] or 0, STATE_CODE[to] or 0, attempt, deadline and deadline - NOW, other, reason)
    if action == 'enqueued' and ENQUEUED then ENQUEUED[to] = {by, entry} end
  end
  m.history = m.history .. entry
  m.hist_n = m.hist_n + 1
  return entry
end

-- record notes that job id (metadata m) goes from state `from` to state
-- `to` by action of actor ("system" for none): it appends an entry to the
-- job's history, saved by the next store, and a transition to the call's
-- answer (effects): the job's id, the holder of the reservation the
-- change ends or extends (holder, if any) and the deadline of the one it
-- begins, ends or extends, its title, priority and batch, then the
-- history entry; the entry says the rest.
local function record(id, m, action, from, to, actor, holder, reason)
  -- attempt: which attempt a reservation is (a failure or expiry has
  -- counted its own already); otherwise the attempts spent so far.
  local attempt = m.attempts
  if (from == 'reserved' or to == 'reserved') and action ~= 'failed' and action ~= 'expired' then
    attempt = attempt + 1
  end
  local deadline = nil
  if to == 'reserved' then deadline = m.deadline end
  local by, other = nil, nil
  if actor ~= 'system' then by = actor end
  if holder ~= actor then other = holder end
  local entry = append_entry(m, action, by, from, to, attempt, deadline, other, reason)
  -- The transition's deadline is also that of a reservation it ends.
  if from == 'reserved' and not deadline then deadline = m.deadline end
  TRANS[#TRANS + 1] = cmsgpack.pack(id, holder or '', deadline or 0, m.title, m.priority, m.batch or '') .. entry
  local event = EVENT_TYPE[to]
  if action == 'breached' then event = 'job.sla_breached' end
  if event then
    ENDED[#ENDED + 1] = event
    ENDED[#ENDED + 1] = id
  end
end

-- NOT_ACTIONS are the history entries no one's action makes, which follow
-- one by themselves: admissions into a batch slot (after a give-back),
-- drafts saved, the moments of a due time (sla.lua, whenever they come),
-- a move to the breach queue (move_in.lua) and a fallback (fall_back).
local NOT_ACTIONS = {
  [ACTION_CODE.admitted] = true, [ACTION_CODE.drafted] = true,
  [ACTION_CODE.at_risk] = true, [ACTION_CODE.breached] = true, [ACTION_CODE.moved] = true,
  [ACTION_CODE.fell_back] = true,
}

-- last_action returns the action code, actor and reason of the job's
-- latest history entry but those of NOT_ACTIONS (nil for a job without
-- history); of those by person, if given.
local function last_action(m, person)
  local h, at, action, actor, reason = m.history, 0, nil, nil, nil
  while at ~= -1 and at < #h do
    local next_at, _, a, by, _, _, _, _, _, why = cmsgpack.unpack_limit(h, HISTORY_ENTRY, at)
    if not NOT_ACTIONS[a] and (not person or by == person) then action, actor, reason = a, by, why end
    at = next_at
  end
  return action, actor, reason
end

-- Drafts. While holders type, their page saves what they typed as the
-- job's live draft, field of K.drafts (draft.lua, draft_field): who, when, the
-- draft's JSON. A reservation's first save (one that finds no live draft)
-- adds a "drafted" entry to the history. When a reservation ends, its
-- live draft goes: a completion, or the holder's own give-back, skip or
-- failure, drops it with one HDEL, draft or none (cheaper than reading
-- the history for one); a
-- take-back (DRAFT_KEPT_BY) keeps it in the job's field "<id>\nkept", for
-- the next holder and the supervisors: per draft its three values, then
-- the action that ended it, its actor and when, the latest DRAFTS_KEPT.
local DRAFT_KEPT_BY = {force_released = true, canceled = true, expired = true, transferred = true}
local DRAFT_VALUES = 6

-- draft_field names holder's live draft of the job in K.drafts: "<id>",
-- or "<id>\n@<holder>" for a job with overlap, which several people may
-- hold at once (Seats, below).
local function draft_field(id, m, holder)
  if m.overlap then return id .. '\n@' .. holder end
  return id
end

-- end_draft ends the live draft of a reservation that action of actor
-- ends: kept when the reservation was taken from its holder, else dropped.
local function end_draft(id, m, action, actor)
  -- A joined call looks once whether the queue has any draft: none of
  -- its changes saves one.
  if JOINED and SEEN.drafts == nil then SEEN.drafts = redis.call('EXISTS', K.drafts) == 1 end
  if SEEN.drafts == false then return end
  local own = draft_field(id, m, m.reserved_by)
  if not DRAFT_KEPT_BY[action] then
    redis.call('HDEL', K.drafts, own)
    return
  end
  local field = id .. '\nkept'
  local got = redis.call('HMGET', K.drafts, own, field)
  local live, raw = got[1], got[2]
  if not live then return end
  local kept = {}
  if raw then kept = {cmsgpack.unpack(raw)} end
  local by, at, draft = cmsgpack.unpack(live)
  local n = #kept
  kept[n + 1], kept[n + 2], kept[n + 3] = by, at, draft
  kept[n + 4], kept[n + 5], kept[n + 6] = action, actor, NOW
  while #kept > DRAFTS_KEPT * DRAFT_VALUES do
    for _ = 1, DRAFT_VALUES do table.remove(kept, 1) end
  end
  redis.call('HSET', K.drafts, field, cmsgpack.pack(unpack(kept)))
  redis.call('HDEL', K.drafts, own)
end

-- Batches. Each job of a batch counts in one of its batch's counters
-- (BUCKET names which, per state). A batch with max_concurrent > 0 keeps its
-- ready jobs out of the claim line, in parked, and admits the best of them
-- into ready only while reserved + admitted < max_concurrent. A slot is
-- nothing but those two counters, changed by the same script that moves the
-- job, so no crash or race can leak or double one; and claim never meets a
-- job it may not take, so it never scans past a full batch.
local BUCKET = {
  ready = 'ready', scheduled = 'ready', reserved = 'reserved',
  completed = 'completed', dead = 'dead', canceled = 'canceled',
}

-- A job of a batch that moves to another queue (move_out.lua) counts in
-- its batch's "moved" until it ends there; K.away says in which counter
-- its batch counts it, which the cron job changes as it ends, or is
-- requeued, there (batch_return.lua). A batch made before jobs moved has
-- no "moved": none of its jobs has.

-- batch returns the record of batch bid (nil for no batch, or one purged).
local function batch(bid)
  if not bid then return nil end
  local b = BATCHES[bid]
  if b == nil then
    local raw = redis.call('HGET', K.batches, bid)
    if not raw then return nil end
    b = cjson.decode(raw)
    b.moved = b.moved or 0
    BATCHES[bid] = b
  end
  return b
end

-- padded writes a rank or due time (an integer above -10^14) for a member
-- that sorts by it: 17 digits.
local function padded(n)
  return string.format('%017.0f', n + 1e14)
end

-- id_of returns the job of a place in a line: "<padded score>|<id>".
local function id_of(place)
  return string.sub(place, 19)
end

-- parked_member names a parked job so that a batch's jobs sort together,
-- best rank first (ranks are integers above -10^14: offset, zero-padded).
local function parked_member(id, m)
  return m.batch .. '|' .. padded(m.rank) .. '|' .. id
end

-- Routing. A job may be routed to named people (m.route_to: their names,
-- one per line; until m.fallback_at, if it has one, and after it to those
-- with its skills) or to people with skills (m.skills: canonical, as
-- Go's Skills.String writes them, "contracts:3,de:1"); any other job is
-- open to everyone in the queue. A routed job waits, while in line, in
-- lines of its own: one per person it is routed to ("@<name>"), else one
-- for its skills ("+<skills>"). K.routed holds each line's jobs as
-- members "r<line>|<rank, padded>|<id>" (and, with a due time,
-- "d<line>|<due time, padded>|<id>"), so that a line's jobs sort
-- together, best first, as parked ones do, and a claim finds the best job
-- of each line it may take at once, never passing one it may not (claim_for).
-- K.routes names every skills line the queue ever had (a line stays when
-- its last job goes: a claim's idea of the lines changes only when a new
-- one comes), and conf's "routes_v" counts the lines that came. Go keeps the lines a claim by
-- someone with given skills may take from (their skills cover the
-- line's), by that count, and hands them to the claim (given_lines); a
-- claim handed them by another count answers "routes" (claim_for), and Go
-- reads the lines again. So the rule of who may take what is Go's alone
-- (skills.Set.Covers), and a claim looks only in lines it may take from.
-- K.heads holds each line's first job ("r<line>", "d<line>"), while it
-- has one, as its member ends: "<rank, or due time, padded>|<id>"; so a
-- claim learns with one command which job of all its lines comes first
-- (what it read stays in SEEN.heads for the rest of the call: first_of).
-- The preferred jobs wait for their fallback in K.fallback, by its time;
-- conf's "fallback_at" is no later than the first of them (note_fallback),
-- so that a claim looks there only once one may have come.
-- A routed job is in INDEX.ready (and K.readydue) too, its score raised by
-- ROUTED, so counts, lists and every state's index stay as they were, and
-- the open line is INDEX.ready below ROUTED. The queue's conf "routed" is
-- "1" once a routed job was made there: a claim in a queue that never had
-- one looks nowhere else.
local ROUTED = 1e15

-- REVIEW_LINE (defined before this file, from Go's reviewLine) is the
-- line of the jobs that wait for review (Review, below): only a review
-- claim takes from it.

-- lines_of returns the lines a routed job waits in, nil for an open one.
local function lines_of(m)
  if m.review then return {REVIEW_LINE} end
  if m.route_to then
    local lines = {}
    for name in string.gmatch(m.route_to, '[^\n]+') do lines[#lines + 1] = '@' .. name end
    return lines
  end
  if m.skills then return {'+' .. m.skills} end
  return nil
end

-- first_of returns the line's first job as K.heads holds it (false for
-- none), as read in this call if it was; set_first files it there.
local function first_of(line)
  local seen = SEEN.heads
  local first = seen and seen[line]
  if first == nil then
    first = redis.call('HGET', K.heads, line)
    if seen then seen[line] = first end
  end
  return first
end

local function set_first(line, place)
  if place then
    redis.call('HSET', K.heads, line, place)
  else
    redis.call('HDEL', K.heads, line)
  end
  if SEEN.heads then SEEN.heads[line] = place or false end
end

-- note_fallback files a preferred job's fallback (K.fallback), and its
-- time in conf's "fallback_at" if it is the first.
local function note_fallback(id, at)
  redis.call('ZADD', K.fallback, int(at), id)
  local first = tonumber(redis.call('HGET', K.conf, 'fallback_at'))
  if not first or at < first then redis.call('HSET', K.conf, 'fallback_at', int(at)) end
end

-- join files a place ("<padded score>|<id>") in a line of K.routed, and
-- as the line's first if it comes first (gathered in TOPS while writes
-- are). It returns the line's first before, if known.
local function join(line, place)
  write('ZADD', K.routed, '0', line .. '|' .. place)
  if TOPS then
    if not TOPS[line] or before(place, TOPS[line]) then TOPS[line] = place end
    return
  end
  local first = first_of(line)
  if not first or before(place, first) then set_first(line, place) end
  return first
end

-- leave takes a place out of a line of K.routed: a line whose first job
-- leaves has its next first, if any, in K.heads.
local function leave(line, place)
  redis.call('ZREM', K.routed, line .. '|' .. place)
  if first_of(line) ~= place then return end
  local first = redis.call('ZRANGEBYLEX', K.routed, '[' .. line .. '|', '(' .. line .. '}', 'LIMIT', '0', '1')[1]
  set_first(line, first and string.sub(first, #line + 2))
end

-- count_line counts a skills line in K.routes, and the lines that came in
-- conf's "routes_v", if it is new.
local function count_line(line)
  if redis.call('HSETNX', K.routes, line, '1') == 1 then redis.call('HINCRBY', K.conf, 'routes_v', 1) end
end

-- The oldest wait. K.waiting holds every ready job by since when it waits
-- (its run_at), so the oldest is found at once whatever the claim order
-- (oldest_waiting). A queue made plain (conf's "plain", set when it is
-- made: queue_put.lua) keeps no such index while every ready job it has
-- ever had was plain: in INDEX.ready, in no routed line, at a rank that
-- is its run_at plus the same offset for them all, rank less run_at (one
-- priority, one ageing, none of a batch with a cap, no dead job requeued,
-- whose wait starts over at its old rank). Then INDEX.ready is in the
-- order of the waits, and its first is the oldest: an enqueue and a claim
-- each spare a sorted set's write and its memory. Conf's "plain" is "new"
-- until the first job is lined up, then that offset (ms). The first job lined up
-- otherwise ends that for good (unplain): the queue's ready jobs are
-- indexed there and then, and it files and unfiles them in K.waiting
-- from then on. A queue with more than INDEX_AT_ONCE ready jobs is indexed
-- (counted in INDEX.ready; an enqueue's jobs gathered for it come on top)
-- instead as one made by an earlier version is, by the cron job's walk
-- (waiting_index.lua); until the walk is done, the oldest wait is not
-- known.
local INDEX_AT_ONCE = 1000

-- as_plain reads conf's "plain", "waiting_indexed" and "waiting_cursor"
-- as stored: false (not plain), true (plain, no job lined up yet) or the
-- offset, rank less run_at. A queue that also has an index, whole or
-- being walked, is not plain: an earlier version, which neither reads nor
-- ends plainness, indexed it meanwhile.
local function as_plain(raw, indexed, cursor)
  if not raw or indexed or cursor then return false end
  return raw == 'new' or tonumber(raw) or false
end

-- is_plain returns whether the queue is plain, as as_plain, read once per
-- call (SEEN.plain: enqueue.lua and claim_for read it with their
-- settings).
local function is_plain()
  if SEEN.plain == nil then
    SEEN.plain = as_plain(unpack(redis.call('HMGET', K.conf, 'plain', 'waiting_indexed', 'waiting_cursor')))
  end
  return SEEN.plain
end

-- unplain ends the queue's plainness, if it is plain, as job id (m), not
-- in line yet, is filed otherwise: each job in INDEX.ready, or gathered
-- for it, waits since its score less the offset, and job id since its
-- run_at.
local function unplain(id, m)
  local p = is_plain()
  if not p then return end
  SEEN.plain = false
  -- (Whatever a version that keeps it always may have left there goes.)
  redis.call('DEL', K.waiting)
  if redis.call('ZCARD', INDEX.ready) > INDEX_AT_ONCE then
    redis.call('HDEL', K.conf, 'plain', 'waiting_indexed', 'waiting_cursor')
    return
  end
  local waits = {}
  local function waits_since(score, job)
    waits[#waits + 1], waits[#waits + 2] = int(tonumber(score) - p), job
  end
  if p ~= true then
    local lined = redis.call('ZRANGE', INDEX.ready, '0', '-1', 'WITHSCORES')
    for i = 1, #lined, 2 do waits_since(lined[i + 1], lined[i]) end
    local gathered = DEFER and DEFER[INDEX.ready] or {}
    for i = 2, #gathered, 2 do waits_since(gathered[i], gathered[i + 1]) end
  end
  waits[#waits + 1], waits[#waits + 2] = int(m.run_at), id
  for i = 1, #waits, 1000 do
    redis.call('ZADD', K.waiting, unpack(waits, i, math.min(i + 999, #waits)))
  end
  redis.call('HDEL', K.conf, 'plain')
  redis.call('HSET', K.conf, 'waiting_indexed', '1')
end

-- line_up puts a claimable job in line at its rank: an open one in
-- INDEX.ready, a routed one in its lines too (ROUTED above), each with a
-- due time in the due lines.
local function line_up(id, m)
  local lines = lines_of(m)
  local p = is_plain()
  if p == true and not lines then
    p = m.rank - m.run_at
    redis.call('HSET', K.conf, 'plain', int(p))
    SEEN.plain = p
  end
  if p and (lines or m.rank - m.run_at ~= p) then unplain(id, m) end
  local above = lines and ROUTED or 0
  write('ZADD', INDEX.ready, int(m.rank + above), id)
  if m.due_at then write('ZADD', K.readydue, int(m.due_at + above), id) end
  if not lines then return end
  local rank, due = padded(m.rank), m.due_at and padded(m.due_at)
  -- flush counts the new lines of gathered writes.
  local known = TOPS ~= nil
  for _, line in ipairs(lines) do
    if join('r' .. line, rank .. '|' .. id) then known = true end
    if due then join('d' .. line, due .. '|' .. id) end
  end
  -- A skills line that had no job may be new: then it is counted.
  if m.skills and not m.route_to and not m.review and not known then count_line(lines[1]) end
end

-- out_of_line takes a job out of line: it returns false if it was not
-- in line (parked, or in no line at all).
local function out_of_line(id, m)
  if redis.call('ZREM', INDEX.ready, id) == 0 then return false end
  if m.due_at then redis.call('ZREM', K.readydue, id) end
  local lines = lines_of(m)
  if not lines then return true end
  local rank, due = padded(m.rank), m.due_at and padded(m.due_at)
  for _, line in ipairs(lines) do
    leave('r' .. line, rank .. '|' .. id)
    if due then leave('d' .. line, due .. '|' .. id) end
  end
  return true
end

-- fill admits a capped batch's best parked jobs into the claim line while
-- it has free slots. A canceled batch admits nothing more.
local function fill(bid, b)
  if b.max_concurrent == 0 or b.state == 'canceled' then return end
  while b.reserved + b.admitted < b.max_concurrent do
    local head = redis.call('ZRANGEBYLEX', K.parked, '[' .. bid .. '|', '(' .. bid .. '}', 'LIMIT', '0', '1')[1]
    if not head then return end
    local id = string.match(head, '^[^|]+|%d+|(.+)$')
    redis.call('ZREM', K.parked, head)
    local m = load(id)
    line_up(id, m)
    b.admitted = b.admitted + 1
    record(id, m, 'admitted', 'ready', 'ready', 'system')
    store(id, m)
  end
end

-- settle admits jobs into free slots, finishes a sealed batch whose jobs
-- have all ended (or reopens one whose dead job was requeued), and marks it
-- to be saved once, when the call answers.
local function settle(bid, b)
  fill(bid, b)
  if b.state ~= 'open' then
    local ended = b.completed + b.dead + b.canceled == b.total
    if ended and not b.finished_at then
      b.finished_at = NOW
      if b.state ~= 'canceled' then
        b.state = (b.dead + b.canceled > 0) and 'completed_with_failures' or 'completed'
      end
      redis.call('ZADD', K.batchdone, int(NOW), bid)
      FINISHED[bid] = true
    elseif not ended and b.finished_at then
      -- (A canceled batch stays canceled: only its job that moved to
      -- another queue can be requeued, there: batch_return.lua.)
      b.finished_at = nil
      FINISHED[bid] = nil
      if b.state ~= 'canceled' then b.state = 'sealed' end
      redis.call('ZREM', K.batchdone, bid)
    end
  end
  DIRTY[bid] = true
end

-- unfile takes the job out of the index of its state (and a ready job out
-- of K.waiting, and of K.readydue if it has a due time).
local function unfile(id, m, b)
  if m.state ~= 'ready' then
    redis.call('ZREM', INDEX[m.state], id)
    return
  end
  if not is_plain() then redis.call('ZREM', K.waiting, id) end
  if out_of_line(id, m) then
    if b then b.admitted = b.admitted - 1 end
  elseif b then
    redis.call('ZREM', K.parked, parked_member(id, m))
  end
end

-- file puts the job in the index of its state, at score (and a ready job
-- in K.waiting, since its run_at, and a claimable one with a due time in
-- K.readydue). A ready job of a capped batch goes to parked; settle admits
-- it when a slot is free.
local function file(id, m, score, b)
  if m.state ~= 'ready' then
    write('ZADD', INDEX[m.state], int(score), id)
    return
  end
  local parked = b and b.max_concurrent > 0
  if parked and is_plain() then
    unplain(id, m)
  elseif not is_plain() then
    write('ZADD', K.waiting, int(m.run_at), id)
  end
  if parked then
    write('ZADD', K.parked, '0', parked_member(id, m))
  else
    line_up(id, m)
    if b then b.admitted = b.admitted + 1 end
  end
end

-- Due times. A job may have a due time (m.due_at, ms) and, before it, the
-- moment it is at risk of missing it (m.warn_at). While it is unfinished,
-- K.sla holds when its next such moment comes, and once at risk K.late
-- holds it by its due time: the cron job (sla.lua) finds there the jobs
-- whose moment came, and the counts of those at risk and breached are two
-- ZCOUNTs of K.late.

-- rewatch files an unfinished job with a due time as it stands at NOW,
-- making no event of moments already passed: a job put back in line after
-- it ended (requeue.lua).
local function rewatch(id, m)
  if NOW < m.warn_at then
    redis.call('ZADD', K.sla, int(m.warn_at), id)
    return
  end
  if NOW < m.due_at then redis.call('ZADD', K.sla, int(m.due_at), id) end
  redis.call('ZADD', K.late, int(m.due_at), id)
end

-- Claim keys. A client's key (printable ASCII without spaces) is filed in
-- K.claims, holder and key to the job, while its reservation lasts. A key
-- with a space is the engine's own: Complete & next claims with
-- "next <completed job>", found again among its holder's reservations
-- (claimed_with), which costs a retry a little and every cycle nothing.
local function filed(key)
  return not string.find(key, ' ', 1, true)
end

-- end_reservation forgets the reservation's deadline and claim key, takes
-- it out of its holder's, and ends its draft (end_draft) as action of
-- actor ends it. The holder and token stay: a retry of the holder's last
-- action is known by them (take, below), until the next claim replaces
-- them.
local function end_reservation(id, m, action, actor)
  end_draft(id, m, action, actor)
  redis.call('ZREM', K.holding, m.reserved_by .. '\n' .. id)
  if m.claim_key and filed(m.claim_key) then
    -- A retry after this reservation ran out may have filed the key for a
    -- newer one: that entry stays.
    local field = m.reserved_by .. '\n' .. m.claim_key
    if redis.call('HGET', K.claims, field) == id then redis.call('HDEL', K.claims, field) end
  end
  m.reserved_at, m.deadline, m.extensions, m.claim_key = nil, nil, nil, nil
end

-- Seats. In a queue that lets it (at_once, below), a job with overlap
-- (Overlap, below) may be held by up to as many people at once as it
-- still needs answers. The job is reserved while
-- anyone holds it; its reservation fields (reserved_by, token,
-- reserved_at, deadline, extensions, claim_key) are one of its
-- reservations, and m.seats holds the others, each as one string (seat,
-- unseat). Every reservation is fenced, extended, filed under its holder
-- and ended as a job's one reservation is: whatever a holder's token or
-- a supervisor's named holder acts on is made the job's reservation first
-- (fence, hold_of), so every script acts on it unchanged; one that ends
-- while others remain leaves the job reserved by one of them (end_hold),
-- and one that ends the job ends them all (drop_seats). INDEX.reserved
-- files the job by its first deadline (held_until). While a reserved
-- job has seats free, it waits in the seat lines too: in K.routed, the
-- line SEAT_LINE followed by each line it waits in when in line (lines_of;
-- SEAT_LINE alone for an open job), so a claim finds it among those it may
-- take (next_for); m.seated names its members there. There a claim of
-- a job with overlap marks its holder at once (not_for), so nobody holds
-- one job twice, and claims look past what they hold as past what they
-- skipped.

-- seat writes the job's reservation as a seat.
local function seat(m)
  return m.reserved_by .. '\n' .. m.token .. '\n' .. int(m.reserved_at) .. '\n' .. int(m.deadline) .. '\n'
    .. int(m.extensions) .. '\n' .. (m.claim_key or '')
end

-- unseat makes the seat the job's reservation, and returns the job; of
-- an empty table, the seat read (as_seat).
local function unseat(m, s)
  local by, token, at, deadline, extensions, key = string.match(s, '^([^\n]*)\n([^\n]*)\n(%d+)\n(%d+)\n(%d+)\n(.*)$')
  m.reserved_by, m.token, m.reserved_at, m.deadline = by, token, tonumber(at), tonumber(deadline)
  m.extensions, m.claim_key = tonumber(extensions), key ~= '' and key or nil
  return m
end

local function as_seat(s)
  return unseat({}, s)
end

-- seat_where returns the place in m.seats of the first seat whose
-- reservation has field equal to value, nil if none.
local function seat_where(m, field, value)
  for i, s in ipairs(m.seats or {}) do
    if as_seat(s)[field] == value then return i end
  end
  return nil
end

-- swap makes seat i the job's reservation, and the reservation seat i.
local function swap(m, i)
  local s = m.seats[i]
  m.seats[i] = seat(m)
  unseat(m, s)
end

-- hold_of makes holder's reservation of the job, if it has one, the
-- job's reservation, and reports whether it has one.
local function hold_of(m, holder)
  if m.state ~= 'reserved' then return false end
  if m.reserved_by == holder then return true end
  local i = seat_where(m, 'reserved_by', holder)
  if i then swap(m, i) end
  return i ~= nil
end

-- held_until returns the first deadline of the job's reservations.
local function held_until(m)
  local first = m.deadline
  for _, s in ipairs(m.seats or {}) do
    first = math.min(first, as_seat(s).deadline)
  end
  return first
end

-- at_once reports whether the queue lets several people hold a job with
-- overlap at once (conf's "overlap_at_once"): else they hold it one at a
-- time, and it has no seats.
local function at_once()
  if SEEN.at_once == nil then SEEN.at_once = redis.call('HGET', K.conf, 'overlap_at_once') == '1' end
  return SEEN.at_once
end

-- seat_members returns the members the job should have in the seat lines,
-- one per line of text, nil for none.
local function seat_members(id, m)
  if m.state ~= 'reserved' or not m.overlap or m.review then return nil end
  if (m.answers or 0) + 1 + #(m.seats or {}) >= m.overlap or not at_once() then return nil end
  local members = {}
  for _, line in ipairs(lines_of(m) or {''}) do
    members[#members + 1] = 'r' .. SEAT_LINE .. line .. '|' .. padded(m.rank) .. '|' .. id
    if m.due_at then members[#members + 1] = 'd' .. SEAT_LINE .. line .. '|' .. padded(m.due_at) .. '|' .. id end
  end
  return table.concat(members, '\n')
end

function reseat(id, m)
  if not m.overlap and not m.seated then return end
  local want = seat_members(id, m)
  if want == m.seated then return end
  for member in string.gmatch(m.seated or '', '[^\n]+') do
    local line, place = string.match(member, '^([^|]*)|(.*)$')
    leave(line, place)
  end
  for member in string.gmatch(want or '', '[^\n]+') do
    local line, place = string.match(member, '^([^|]*)|(.*)$')
    join(line, place)
  end
  -- A skills line may be new, as in line_up: then it is counted.
  if want and m.skills and not m.route_to then count_line('+' .. m.skills) end
  -- Claims of the queue look in the lines, and in the seat lines, from
  -- now on (claim_for); later claims of a joined call too.
  if want and not (SEEN.claim and SEEN.claim[9] == '1') then
    redis.call('HSET', K.conf, 'routed', '1', 'seats', '1')
    if SEEN.claim then SEEN.claim[5], SEEN.claim[9] = '1', '1' end
  end
  m.seated = want
end

-- oldest_waiting returns since when (ms) the queue's oldest ready job
-- waits: 0 if none does, or if the queue is neither plain nor indexed
-- whole yet (waiting_index.lua).
local function oldest_waiting()
  local got = redis.call('HMGET', K.conf, 'plain', 'waiting_indexed', 'waiting_cursor')
  local p, index = as_plain(got[1], got[2], got[3]), K.waiting
  if p then
    index = INDEX.ready
  elseif not got[2] then
    return 0
  end
  local oldest = redis.call('ZRANGE', index, '0', '0', 'WITHSCORES')
  if not oldest[2] then return 0 end
  -- (A plain queue's first job has a rank: p is a number.)
  if p then return tonumber(oldest[2]) - p end
  return tonumber(oldest[2])
end

-- Work by person. Each reservation that ends counts once in its holder's
-- tally of the UTC day it ends: K.people's field "<day mod TALLY_DAYS>
-- \n<holder>" holds the day, then how many of the holder's reservations
-- were given back (released or skipped), failed, ran out and were taken
-- back (by a supervisor: force released, requeued or canceled), then the
-- completions (and answers: Overlap, below) as pairs of handling-time bucket and count, by bucket. A
-- handling time of t ms falls in bucket floor(HANDLING_PER_DOUBLING *
-- log2(t / HANDLING_BASE_MS)), 0 at least. Two buckets below 0 count
-- the completions of jobs with a due time: TALLY_ON_TIME those completed
-- before it, TALLY_LATE the others; the queue's conf counts the day's of
-- every holder (sla_day, sla_done, sla_on_time). A field still holding
-- an older day starts over. TALLY_AT says where each action counts.
local TALLY_AT = {released = 2, skipped = 2, failed = 3, expired = 4}
local TALLY_TAKEN = 5
-- HANDLED are the endings that count as work done, by handling time: a
-- completion, an answer (Overlap), work sent to review, and a review's
-- approval or send-back (Review, below). Only a completion or an approval
-- finishes the job, and counts against its due time.
local HANDLED = {completed = true, answered = true, submitted = true, approved = true, sent_back = true}

-- Reviews and agreement by person: K.people's field "<day mod TALLY_DAYS>
-- \n<person>\nr" holds the day, then how many of the person's
-- completions reviewers approved and sent back (Review), how many of
-- their answers to jobs with overlap were judged against the others'
-- (Overlap), and how many of those agreed with the majority. REVIEW_AT
-- says where each counts.
local REVIEW_AT = {approved = 2, sent_back = 3, judged = 4, agreed = 5}

-- review_tally counts each of what in the person's record of the day.
local function review_tally(person, ...)
  local day = math.floor(NOW / 86400000)
  local field = int(day % TALLY_DAYS) .. '\n' .. person .. '\nr'
  local raw = redis.call('HGET', K.people, field)
  local r
  if raw then r = {cmsgpack.unpack(raw)} end
  if not r or r[1] ~= day then r = {day, 0, 0, 0, 0} end
  for _, what in ipairs({...}) do r[REVIEW_AT[what]] = r[REVIEW_AT[what]] + 1 end
  redis.call('HSET', K.people, field, cmsgpack.pack(unpack(r)))
end

-- count counts one in the bucket b of the tally r's pairs.
local function count(r, b)
  local i = TALLY_TAKEN + 1
  while r[i] and r[i] < b do i = i + 2 end
  if r[i] == b then
    r[i + 1] = r[i + 1] + 1
  else
    table.insert(r, i, 1)
    table.insert(r, i, b)
  end
end

local function tally(m, action)
  local day = math.floor(NOW / 86400000)
  local field = int(day % TALLY_DAYS) .. '\n' .. m.reserved_by
  local raw = redis.call('HGET', K.people, field)
  local r
  if raw then r = {cmsgpack.unpack(raw)} end
  if not r or r[1] ~= day then r = {day, 0, 0, 0, 0} end
  if HANDLED[action] then
    local t = math.max(NOW - m.reserved_at, 1)
    count(r, math.max(0, math.floor(HANDLING_PER_DOUBLING * math.log(t / HANDLING_BASE_MS) / math.log(2))))
    if m.due_at and (action == 'completed' or action == 'approved') then
      local on_time = NOW < m.due_at
      count(r, on_time and TALLY_ON_TIME or TALLY_LATE)
      -- And in the queue's attainment of the day (stats.lua).
      local q = redis.call('HMGET', K.conf, 'sla_day', 'sla_done', 'sla_on_time')
      local done, kept = 0, 0
      if tonumber(q[1]) == day then done, kept = tonumber(q[2]), tonumber(q[3]) end
      if on_time then kept = kept + 1 end
      redis.call('HSET', K.conf, 'sla_day', int(day), 'sla_done', int(done + 1), 'sla_on_time', int(kept))
    end
  else
    local at = TALLY_AT[action] or TALLY_TAKEN
    r[at] = r[at] + 1
  end
  redis.call('HSET', K.people, field, cmsgpack.pack(unpack(r)))
end

-- go is every change of a job's state: it records the transition (action
-- of actor, with reason), takes the job out of the index of its state and
-- files it under the new one at score, keeping its batch's counters and
-- slots, and files a reservation the change begins under its holder's, or
-- ends one the change ends and counts it in its holder's tally.
local function go(id, m, state, score, action, actor, reason)
  local from = m.state
  local holder = nil
  if from == 'reserved' then holder = m.reserved_by end
  record(id, m, action, from, state, actor, holder, reason)
  if from == 'reserved' and state ~= 'reserved' then
    tally(m, action)
    end_reservation(id, m, action, actor)
  end
  if state == 'reserved' and from ~= 'reserved' then
    redis.call('ZADD', K.holding, '0', m.reserved_by .. '\n' .. id)
  end
  local b = batch(m.batch)
  unfile(id, m, b)
  if b then b[BUCKET[m.state]] = b[BUCKET[m.state]] - 1 end
  m.state = state
  file(id, m, score, b)
  if b then
    b[BUCKET[state]] = b[BUCKET[state]] + 1
    settle(m.batch, b)
  end
end

-- ENDED_KEPT is how many reservations that ended while others held their
-- job the job keeps in m.ended (Seats, above), latest last, each
-- "<token>\n<holder>\n<action code>\n<actor>": a retry of a holder's
-- last action is known by its token, as the job's last reservation's is
-- by m.token (take), also once the job finished.
local ENDED_KEPT = 16

-- end_hold ends the job's reservation while others hold it (Seats,
-- above), as go would end it (action of actor, with reason, counted in
-- the holder's tally as counted, or as action): the job stays reserved,
-- by the first of them.
local function end_hold(id, m, action, actor, reason, counted)
  record(id, m, action, 'reserved', 'reserved', actor, m.reserved_by, reason)
  tally(m, counted or action)
  m.ended = m.ended or {}
  m.ended[#m.ended + 1] = m.token .. '\n' .. m.reserved_by .. '\n' .. ACTION_CODE[action] .. '\n' .. actor
  if #m.ended > ENDED_KEPT then table.remove(m.ended, 1) end
  end_reservation(id, m, action, actor)
  unseat(m, table.remove(m.seats, 1))
  if #m.seats == 0 then m.seats = nil end
  redis.call('ZADD', INDEX.reserved, int(held_until(m)), id)
end

-- drop_seats ends the job's reservations but its own (Seats, above), as
-- a change that ends the job (action of actor, with reason) ends them,
-- oldest first (then by holder): each counts as taken back in its
-- holder's tally.
local function drop_seats(id, m, action, actor, reason)
  if not m.seats then return end
  local own = seat(m)
  table.sort(m.seats, function(a, b)
    local ta, tb = as_seat(a).reserved_at, as_seat(b).reserved_at
    if ta ~= tb then return ta < tb end
    return a < b
  end)
  while m.seats do
    swap(m, 1)
    end_hold(id, m, action, actor, reason, 'dropped')
  end
  unseat(m, own)
end

-- forget_skips drops the skip records of a job that will never be offered again.
local function forget_skips(id, m)
  if not m.skipped_by then return end
  for _, op in ipairs(m.skipped_by) do
    redis.call('SREM', K.skips, op .. '\n' .. id)
    if redis.call('HINCRBY', K.skipcount, op, '-1') <= 0 then
      redis.call('HDEL', K.skipcount, op)
    end
  end
  m.skipped_by = nil
end

-- forget_skip drops op's skip record of a job, if it has one.
local function forget_skip(id, m, op)
  if redis.call('SREM', K.skips, op .. '\n' .. id) == 0 then return end
  if redis.call('HINCRBY', K.skipcount, op, '-1') <= 0 then redis.call('HDEL', K.skipcount, op) end
  for i, who in ipairs(m.skipped_by or {}) do
    if who == op then
      table.remove(m.skipped_by, i)
      break
    end
  end
  if m.skipped_by and #m.skipped_by == 0 then m.skipped_by = nil end
end

-- mark_answerers marks, as not_for does without a limit, everyone who
-- answered the job (Overlap, below): a job requeued after it died keeps
-- its answers, and still goes to nobody who gave one.
local function mark_answerers(id, m)
  local raw = redis.call('HGET', K.result, id .. '\nanswers')
  if not raw then return end
  for _, a in ipairs(cjson.decode(raw)) do
    if redis.call('SADD', K.skips, a.by .. '\n' .. id) == 1 then
      SEEN.unskipped = nil
      redis.call('HINCRBY', K.skipcount, a.by, 1)
      m.skipped_by = m.skipped_by or {}
      table.insert(m.skipped_by, a.by)
    end
  end
end

-- not_for marks the job as one op is not offered again while it waits (a
-- skip, or a failure op reported), and ends its assignment to op if it
-- had one: K.skips and K.skipcount hold the marks,
-- m.skipped_by who has one on the job. Claim looks past at most limit jobs
-- op marked, so op may have at most limit marks in the queue: at the
-- limit, it marks nothing and answers false. Without a limit (nil) it
-- always marks: a job with overlap (Overlap, below) is never held twice
-- by one person.
local function not_for(id, m, op, limit)
  if limit and tonumber(redis.call('HGET', K.skipcount, op) or '0') >= limit then return false end
  -- A job assigned to op alone is theirs no longer: it goes to anyone
  -- with its skills (Routing, above), or it would wait for nobody.
  if m.route_to == op and not m.fallback_at then
    local lined = m.state == 'ready' and out_of_line(id, m)
    m.route_to = nil
    if lined then line_up(id, m) end
  end
  if redis.call('SADD', K.skips, op .. '\n' .. id) == 1 then
    SEEN.unskipped = nil
    redis.call('HINCRBY', K.skipcount, op, 1)
    m.skipped_by = m.skipped_by or {}
    table.insert(m.skipped_by, op)
  end
  return true
end

-- moved_to returns where the job id moved when it missed its due time, as
-- move_out.lua recorded it in K.moved: the queue, its idempotency key and
-- its batch ('' for none); nil if it did not move here.
local function moved_to(id)
  local record = redis.call('HGET', K.moved, id)
  if not record then return nil end
  return string.match(record, '^([^\n]*)\n([^\n]*)\n(.*)$')
end

-- returned notes that a job that moved here from a batch of another
-- queue ended, or was requeued after it ended: the cron job tells its
-- batch (K.returns, batch_return.lua).
local function returned(id, m)
  if m.batch_from then redis.call('ZADD', K.returns, int(NOW), id) end
end

-- finish files a job under a terminal state: completed, dead or canceled.
local function finish(id, m, state, action, actor, reason)
  forget_skips(id, m)
  returned(id, m)
  if m.due_at then
    redis.call('ZREM', K.sla, id)
    redis.call('ZREM', K.late, id)
  end
  if m.fallback_at then redis.call('ZREM', K.fallback, id) end
  m.finished_at = NOW
  -- Others' reservations end as the job does: taken back by the system
  -- when it dies of another's failure or deadline, canceled with it when
  -- it is canceled (with its batch, by the system).
  if state == 'dead' then
    drop_seats(id, m, 'force_released', 'system')
  elseif state == 'canceled' and action ~= 'canceled' then
    drop_seats(id, m, 'canceled', 'system')
  else
    drop_seats(id, m, action, actor, reason)
  end
  go(id, m, state, NOW, action, actor, reason)
  -- A job that ends while it waits for review (canceled, dead) waits no
  -- more (Review, below); out of its line first, by go.
  if m.review then
    redis.call('HDEL', K.result, id .. '\nreview')
    m.review, m.author = nil, nil
  end
end

-- said is a reason given as an argument: nil for none ("").
local function said(reason)
  if reason == '' then return nil end
  return reason
end

-- unexplained reports whether a supervisor's change given reason ("":
-- none) lacks the reason its queue requires (conf's require_reason). A
-- change given one reads nothing.
local function unexplained(reason)
  return reason == '' and redis.call('HGET', K.conf, 'require_reason') == '1'
end

-- everyone reports whether a supervisor's change names no one holder of
-- a reserved job (holder: '' for none, or the holders seen, one per
-- line): it acts on every reservation of it.
local function everyone(holder)
  return holder == '' or string.find(holder, '\n', 1, true) ~= nil
end

-- as_seen reports whether the job is as a supervisor saw it before acting:
-- in state (any, if ''), and, reserved, held by holder; or, a job held by
-- several at once (Seats, above), by exactly the holders seen (one per
-- line of holder), for a change of every reservation of it (everyone).
local function as_seen(m, state, holder)
  if state == '' then return true end
  if m.state ~= state then return false end
  if state ~= 'reserved' then return true end
  if not everyone(holder) then return hold_of(m, holder) end
  local seen, n = {}, 0
  -- (A browser sends a form's line breaks as CRLF.)
  for name in string.gmatch(holder, '[^\r\n]+') do seen[name], n = true, n + 1 end
  if n ~= 1 + #(m.seats or {}) or not seen[m.reserved_by] then return false end
  for _, s in ipairs(m.seats or {}) do
    if not seen[string.match(s, '^[^\n]*')] then return false end
  end
  return true
end

-- back_in_line returns a job to ready at the rank it had, so it keeps its
-- place; in a canceled batch it is canceled instead. A job with overlap
-- is never offered again to the holder whose reservation this ends (but
-- a review's, which answers nothing: Review, below), and stays reserved
-- while others hold it (Seats, above). The action stays what
-- it was (a holder's give-back is known to its retry and counted as one in
-- the holder's tally); only a due job is canceled by name.
local function back_in_line(id, m, action, actor, reason)
  if m.overlap and not m.review and m.state == 'reserved' then not_for(id, m, m.reserved_by) end
  local b = batch(m.batch)
  if b and b.state == 'canceled' then
    if action == 'promoted' then action = 'canceled' end
    finish(id, m, 'canceled', action, actor, reason)
  elseif m.seats then
    end_hold(id, m, action, actor, reason)
  else
    go(id, m, 'ready', m.rank, action, actor, reason)
  end
end

-- spend_attempt counts a failed attempt (action failed or expired): back in
-- line while attempts are left, dead once they are used up. reason is the
-- job's last error; the history keeps the holder's own reasons.
local function spend_attempt(id, m, action, actor, reason)
  m.attempts = m.attempts + 1
  m.last_error = reason
  local told = nil
  if action == 'failed' then told = reason end
  if m.attempts >= m.max_attempts then
    finish(id, m, 'dead', action, actor, told)
  else
    back_in_line(id, m, action, actor, told)
  end
end

-- plain is the answer of a script that never moves a job or changes a
-- batch (one that reads, or changes only settings or indexes): it touches
-- no key to answer.
local function plain(status, ...)
  if JOINED or #TRANS > 0 or next(DIRTY) then error('plain answer of a call that changed jobs or batches') end
  return {status, '', ...}
end

-- The outbox. While some webhook listens to the queue (conf's "outbox" is
-- "1", set by Go: Store.SetOutbox), every change that ends a job or a
-- batch appends an event to K.outbox, in the same call as the change: an
-- event exists exactly when its change does. An entry's fields: type (an
-- EVENT_TYPE), id (the job's or batch's, without the queue), record (the
-- job's metadata as stored, or the batch's JSON), and for a job its
-- payload and result (and a completed job with overlap its answers and
-- agreement). The stream holds at most OUTBOX_CAP entries: beyond
-- that the oldest go, and conf's "outbox_lost" counts them. Go reads the
-- stream as a consumer group and deletes what it has handed on
-- (internal/tasks/outbox.go).

-- publish appends the events of the changes made since it last ran to
-- the outbox: one per transition into a final state (ENDED), one per batch
-- that finished. A joined call publishes after each change, so each event
-- holds its job or batch as that change left it.
local function publish()
  local events = ENDED
  if next(FINISHED) then
    for bid in pairs(FINISHED) do
      events[#events + 1] = 'batch.finished'
      events[#events + 1] = bid
    end
    FINISHED = {}
  end
  if #events == 0 then return end
  if OUTBOX == nil then OUTBOX = redis.call('HGET', K.conf, 'outbox') end
  if OUTBOX ~= '1' then
    -- (Emptied where it is: most changes of most queues end here.)
    for i = #events, 1, -1 do events[i] = nil end
    return
  end
  ENDED = {}
  PUBLISHED = true
  for i = 1, #events, 2 do
    local kind, id = events[i], events[i + 1]
    if kind == 'batch.finished' then
      redis.call('XADD', K.outbox, '*', 'type', kind, 'id', id, 'record', cjson.encode(BATCHES[id]))
    else
      local entry = {'XADD', K.outbox, '*', 'type', kind, 'id', id, 'record', LOADED[id].raw,
        'payload', redis.call('HGET', K.payload, id) or '', 'result', ''}
      if kind == 'job.completed' then
        -- Its result, and the answers and agreement of a job with overlap.
        local got = redis.call('HMGET', K.result, id, id .. '\nanswers', id .. '\nagreement')
        entry[#entry] = got[1] or ''
        if got[2] then table.insert(entry, 'answers') table.insert(entry, got[2]) end
        if got[3] then table.insert(entry, 'agreement') table.insert(entry, got[3]) end
      end
      redis.call(unpack(entry))
    end
  end
end

-- effects are what the call changed, as answered: "" when it changed no
-- job or batch, else one string of MessagePack values: now in ms, the
-- queue's counts after the call (ready, held, scheduled, reserved, dead),
-- how many batches it changed and each one's id and record JSON, then its
-- transitions (record: id, holder, deadline ms, title, priority, batch,
-- and the history entry). One string costs
-- Redis far less to answer than as many values. Changed batches are saved
-- here, and the outbox's events appended, once per call.
local function effects()
  if CLAIMED > 0 then redis.call('HINCRBY', K.conf, 'claims', CLAIMED) end
  local batches = {}
  for bid in pairs(DIRTY) do
    local raw = cjson.encode(BATCHES[bid])
    redis.call('HSET', K.batches, bid, raw)
    batches[#batches + 1] = bid
    batches[#batches + 1] = raw
  end
  if #TRANS == 0 and #batches == 0 then return '' end
  publish()
  if PUBLISHED and redis.call('XLEN', K.outbox) > OUTBOX_CAP then
    local lost = redis.call('XTRIM', K.outbox, 'MAXLEN', int(OUTBOX_CAP))
    redis.call('HINCRBY', K.conf, 'outbox_lost', lost)
  end
  local parked = redis.call('ZCARD', K.parked)
  local counts = {redis.call('ZCARD', INDEX.ready) + parked, parked,
    redis.call('ZCARD', INDEX.scheduled), redis.call('ZCARD', INDEX.reserved),
    redis.call('ZCARD', INDEX.dead)}
  local head = cmsgpack.pack(NOW, counts[1], counts[2], counts[3], counts[4], counts[5], #batches / 2)
  for i = 1, #batches do head = head .. cmsgpack.pack(batches[i]) end
  -- One string made, not two.
  table.insert(TRANS, 1, head)
  return table.concat(TRANS)
end

-- answer is every script's reply: {status, effects, values...}. In a
-- joined call each change's effects are "": the call answers them once,
-- after the last change (many).
local function answer(status, ...)
  if JOINED then return {status, '', ...} end
  return {status, effects(), ...}
end

-- reply answers a job: {"ok", effects, id, stored metadata, payload, extra
-- values...}.
local function reply(id, raw, ...)
  return answer('ok', id, raw, redis.call('HGET', K.payload, id), ...)
end

-- fence returns nil if token and holder are the job's live reservation's,
-- else what to answer: a token of the job's last reservation from anyone
-- but its holder is forbidden; any other token, or a reservation that
-- ended or ran out, is a lost reservation. A seat's token makes the seat
-- the job's reservation first (Seats, above).
local function fence(m, token, holder)
  if m.token ~= token and m.state == 'reserved' then
    local i = seat_where(m, 'token', token)
    if i then swap(m, i) end
  end
  if m.token ~= token then return 'reservation_lost' end
  if m.reserved_by ~= holder then return 'forbidden' end
  if m.state == 'reserved' and m.deadline > NOW then return nil end
  return 'reservation_lost'
end

-- COMPLETING are the actions, by code, of a holder's completion: one that
-- completes the job, and one that gives an answer (Overlap), sends the
-- result to review or approves it (Review).
local COMPLETING = {[ACTION_CODE.completed] = true, [ACTION_CODE.answered] = true,
  [ACTION_CODE.submitted] = true, [ACTION_CODE.approved] = true}

-- take returns the job if hold (token and holder) is its live
-- reservation's (fence). Otherwise it returns nil and what to answer: a
-- retry of the holder's last action after it took effect (its answer
-- lost) is answered as that action was, the job as it is now; else what
-- fence says.
local function take(id, token, holder, action)
  local m = load(id)
  if not m then return nil, answer('not_found') end
  local refused = fence(m, token, holder)
  if not refused then return m end
  if refused == 'reservation_lost' and m.state ~= 'reserved' and m.token == token then
    local last, by = last_action(m)
    if (last == ACTION_CODE[action] or action == 'completed' and COMPLETING[last]) and by == holder then
      return nil, reply(id, m.raw)
    end
  end
  -- A reservation that ended while others held the job is known by its
  -- token too (Seats, above: m.ended).
  if refused == 'reservation_lost' and m.ended and m.token ~= token then
    for _, e in ipairs(m.ended) do
      local t, by, code, actor = string.match(e, '^([^\n]*)\n([^\n]*)\n(%d+)\n(.*)$')
      if t == token then
        local last = tonumber(code)
        if by == holder and actor == holder and (last == ACTION_CODE[action] or action == 'completed' and COMPLETING[last]) then
          return nil, reply(id, m.raw)
        end
        break
      end
    end
  end
  return nil, answer(refused)
end

-- reclaim ends at most limit reservations whose deadline has passed: each
-- job goes back in line with one attempt spent, or dead. It returns whether
-- more expired reservations remain, and how many it ended.
local function reclaim(limit)
  local expired = redis.call('ZRANGEBYSCORE', INDEX.reserved, '-inf', int(NOW), 'LIMIT', '0', int(limit + 1))
  for i = 1, math.min(#expired, limit) do
    local id = expired[i]
    local m = load(id)
    -- Each of its reservations that ran out (Seats, above), while it
    -- is reserved: the first deadline first (then by holder).
    while m.state == 'reserved' do
      local first, past = m.deadline, 0
      for j, s in ipairs(m.seats or {}) do
        local d = as_seat(s).deadline
        if d < first or d == first and s < seat(m) then first, past = d, j end
      end
      if first > NOW then break end
      if past > 0 then swap(m, past) end
      if m.review then
        -- A review that ran out spends none of the job's attempts: the
        -- job waits for a reviewer again (Review, below).
        back_in_line(id, m, 'expired', 'system')
      else
        spend_attempt(id, m, 'expired', 'system', 'reservation expired (held by ' .. m.reserved_by .. ')')
      end
    end
    store(id, m)
  end
  return #expired > limit, math.min(#expired, limit)
end

-- index_holding files under their holders (K.holding) the live
-- reservations made by a version that did not keep that index: while the
-- index has not as many as the reservations, each call walks about limit
-- more of them (a ZSCAN of reserved, from conf's holding_cursor). Each
-- reservation since is filed as it begins, so once walked the index stays
-- whole.
local function index_holding(limit)
  -- (Jobs held by several at once have more than one.)
  if redis.call('ZCARD', K.holding) >= redis.call('ZCARD', INDEX.reserved) then return end
  local at = redis.call('HGET', K.conf, 'holding_cursor') or '0'
  local step = redis.call('ZSCAN', INDEX.reserved, at, 'COUNT', int(limit))
  local found = step[2]
  for i = 1, #found, 2 do
    local member = load(found[i]).reserved_by .. '\n' .. found[i]
    if redis.call('ZSCORE', K.holding, member) == false then redis.call('ZADD', K.holding, '0', member) end
  end
  if step[1] == '0' then
    redis.call('HDEL', K.conf, 'holding_cursor')
  else
    redis.call('HSET', K.conf, 'holding_cursor', step[1])
  end
end

-- promote moves at most limit due scheduled jobs to ready. It returns
-- whether more are due, and how many it moved.
local function promote(limit)
  local due = redis.call('ZRANGEBYSCORE', INDEX.scheduled, '-inf', int(NOW), 'LIMIT', '0', int(limit + 1))
  for i = 1, math.min(#due, limit) do
    local id = due[i]
    local m = load(id)
    back_in_line(id, m, 'promoted', 'system')
    store(id, m)
  end
  return #due > limit, math.min(#due, limit)
end

-- fall_back routes at most limit preferred jobs whose people's time ran
-- out (K.fallback) by their skills alone, from now on. It returns whether
-- more are due, and how many it routed.
local function fall_back(limit)
  local due = redis.call('ZRANGEBYSCORE', K.fallback, '-inf', int(NOW), 'LIMIT', '0', int(limit + 1))
  local n = math.min(#due, limit)
  for i = 1, n do
    local id = due[i]
    redis.call('ZREM', K.fallback, id)
    local m = load(id)
    if m and m.fallback_at and not m.finished_at then
      local lined = m.state == 'ready' and out_of_line(id, m)
      m.route_to, m.fallback_at = nil, nil
      if lined then line_up(id, m) end
      record(id, m, 'fell_back', m.state, m.state, 'system')
      store(id, m)
    end
  end
  -- The next fallback to come, if any.
  local next_at = redis.call('ZRANGE', K.fallback, '0', '0', 'WITHSCORES')[2]
  if next_at then
    redis.call('HSET', K.conf, 'fallback_at', next_at)
  else
    redis.call('HDEL', K.conf, 'fallback_at')
  end
  return #due > limit, n
end

-- Overlap. In a queue with overlap N above 1 (conf's "overlap"), each job
-- is answered by N people: a claim notes N in the job (m.overlap), and
-- each of its reservations that ends marks its holder as one it is never
-- offered to again (back_in_line, not_for without a limit). Each answer
-- but the last puts the job back in line in its place (history
-- "answered"), the answer kept in K.result's field "<id>\nanswers": a
-- JSON array of {"by", "at" (ms), "result"}, each result as given, and
-- m.answers counts them. The last answer completes the job: its result
-- is what the answers agree on, and K.result's "<id>\nagreement" how far
-- they agree, per field of the outcome form, both made in Go
-- (Outcome.Agree) from every answer. Go reads the earlier answers only
-- for a last one: a completion that does not hand them in agreed
-- (agreed: how many answers they are, "" for none) is answered
-- "answers" and the answers with this one, for Go to agree them and
-- complete again.

-- answers_with returns the job's answers as stored, with one more: the
-- holder's result, at NOW.
local function answers_with(id, holder, result)
  local entry = '{"by":' .. cjson.encode(holder) .. ',"at":' .. int(NOW) .. ',"result":' .. (result ~= '' and result or 'null') .. '}'
  local prior = redis.call('HGET', K.result, id .. '\nanswers')
  if not prior then return '[' .. entry .. ']' end
  return string.sub(prior, 1, -2) .. ',' .. entry .. ']'
end

-- Review. A queue may have completions reviewed before they finish the
-- job: every one by an author in training (Go says, per completion), a
-- share of the others (conf's "review_fraction", against a roll Go makes
-- per completion), and, in a queue with overlap, each job whose answers
-- agree less than conf's "min_agreement" on some field (the lowest share
-- Go agreed). Such a completion goes to review instead (history
-- "submitted", its reason why: "training", "sample" or "disagreement"):
-- the result waits in K.result's field "<id>\nreview", m.review says why
-- and m.author whose it is, the author is marked as one it is never
-- offered to (no self-review), and the job waits in line in the review
-- line (REVIEW_LINE), which only a review claim reads (given_lines). A
-- review is a reservation as any other (leased, fenced, extended, given
-- back, reclaimed): its holder approves (complete_held, mode "approve":
-- the job completes with the result waiting, or the one the reviewer
-- gives, history "approved") or sends it back with a note (send_back.lua).
-- Each counts in the author's review tally (review_tally).

-- COMPLETION says where each argument of a completion is in its script's
-- ARGV (complete.lua's; complete_next.lua's begin alike).
local COMPLETION = {token = 3, holder = 4, result = 5, form = 6, fits = 7, agreed = 8, agreement = 9,
  agreed_result = 10, lowest = 11, judged = 12, roll = 13, training = 14, mode = 15}

-- complete_held finishes the reserved job for its holder with a result
-- (empty: none), if the result fits the queue's outcome form; argv are
-- the completion's arguments, named as COMPLETION (above) names them. The
-- form is checked in Go (Outcome.Check), against the form as Go last read it:
-- form names it (the SHA-1 of the form as stored in conf, "" for none)
-- and fits says whether the result fits it ('1') or not. The form is read
-- here again, in the same call that completes the job, so that a form
-- changed meanwhile is never judged by the old one: if it differs, the
-- answer is "form" and the form as stored, for Go to check the result
-- again. Only the holder learns about the form: anyone else is answered
-- by the hold first. A job with overlap takes the result as one answer
-- (Overlap, above): agreed (how many answers before this one Go agreed,
-- "" for none), agreement, agreed_result, lowest (the lowest share
-- agreed) and judged (each answerer, "=1" when they agreed with the
-- majority, one per line) come from Go. A completion may go to review
-- instead (Review, above): by training ("1": the author is in training),
-- or by roll. mode "approve" is a reviewer's approval, the only way a
-- review's reservation completes. It returns "ok" and the job's stored
-- metadata and the result kept; "again" and the same when the holder
-- completed it before (a retry whose answer was lost: the result sent
-- first stays); "unfit" when the result does not fit the form, changing
-- nothing; or another status and the answer to give.
local function complete_held(id, argv)
  local at = COMPLETION
  local token, holder, result, form, fits = argv[at.token], argv[at.holder], argv[at.result], argv[at.form], argv[at.fits]
  local mode = argv[at.mode]
  local m, done = take(id, token, holder, 'completed')
  if not m then
    if done[1] == 'ok' then return 'again', done[4], redis.call('HGET', K.result, id) or '' end
    return done[1], done
  end
  -- The outbox flag and the review settings too, read here with the form.
  local seen = SEEN.form
  if not seen then
    local got = redis.call('HMGET', K.conf, 'outcome', 'outbox', 'review_fraction', 'min_agreement')
    seen = {got[1] or '', got[2], tonumber(got[3] or '0'), tonumber(got[4] or '0')}
    seen.sum = redis.sha1hex(seen[1])
    SEEN.form = seen
  end
  local stored = seen[1]
  OUTBOX = seen[2]
  if seen.sum ~= form then return 'form', answer('form', stored) end
  if (mode == 'approve') ~= (m.review ~= nil) then return 'invalid_state', answer('invalid_state') end
  -- (An approval without a result of its own takes the one that waits,
  -- which fit the form when it came.)
  if fits ~= '1' and not (m.review and result == '') then return 'unfit', answer('unfit') end
  if m.review then
    if result == '' then result = redis.call('HGET', K.result, id .. '\nreview') or '' end
    redis.call('HDEL', K.result, id .. '\nreview')
    review_tally(m.author, 'approved')
    m.review, m.author = nil, nil
    if result ~= '' then redis.call('HSET', K.result, id, result) end
    finish(id, m, 'completed', 'approved', holder)
    return 'ok', store(id, m), result
  end
  local why = nil
  if m.overlap then
    local given = m.answers or 0
    local answers = answers_with(id, holder, result)
    if given + 1 < m.overlap then
      redis.call('HSET', K.result, id .. '\nanswers', answers)
      m.answers = given + 1
      back_in_line(id, m, 'answered', holder)
      return 'ok', store(id, m), ''
    end
    if argv[at.agreed] ~= int(given) then return 'answers', answer('answers', answers) end
    m.answers = given + 1
    result = argv[at.agreed_result]
    redis.call('HSET', K.result, id .. '\nanswers', answers, id .. '\nagreement', argv[at.agreement])
    for person, agreed in string.gmatch(argv[at.judged], '([^\n=]+)=(%d)') do
      if agreed == '1' then review_tally(person, 'judged', 'agreed') else review_tally(person, 'judged') end
    end
    if seen[4] > 0 and argv[at.lowest] ~= '' and tonumber(argv[at.lowest]) < seen[4] then why = 'disagreement' end
  end
  if not why and argv[at.training] == '1' then why = 'training' end
  if not why and seen[3] > 0 and tonumber(argv[at.roll]) < seen[3] then why = 'sample' end
  if why then
    redis.call('HSET', K.result, id .. '\nreview', result)
    redis.call('HSET', K.conf, 'routed', '1')
    -- Later claims of a joined call look in the lines from now on.
    if SEEN.claim then SEEN.claim[5] = '1' end
    m.review, m.author = why, holder
    not_for(id, m, holder)
    back_in_line(id, m, 'submitted', holder, why)
    return 'ok', store(id, m), ''
  end
  if result ~= '' then redis.call('HSET', K.result, id, result) end
  finish(id, m, 'completed', 'completed', holder)
  return 'ok', store(id, m), result
end

-- claimed_with returns the job of op's live reservation made with the claim
-- key, if there is one.
local function claimed_with(op, key)
  local function live(id)
    local m = load(id)
    return m and hold_of(m, op) and m.deadline > NOW
  end
  if filed(key) then
    local id = redis.call('HGET', K.claims, op .. '\n' .. key)
    if id and live(id) and LOADED[id].claim_key == key then return id end
    return nil
  end
  local prefix = op .. '\n'
  for _, member in ipairs(redis.call('ZRANGEBYLEX', K.holding, '[' .. prefix, '(' .. op .. '\v')) do
    local id = string.sub(member, #prefix + 1)
    if live(id) and LOADED[id].claim_key == key then return id end
  end
  return nil
end

-- given_lines reads the skills lines Go hands a claim (Routing, above):
-- the count of lines it knows them by, and those that the claimer's skills
-- cover, one per line of text.
local function given_lines(version, text)
  -- The claims of a joined call are mostly given the same: read once.
  local seen = SEEN.given
  if seen and seen[1] == version and seen[2] == text then return seen[3] end
  local given
  if version == 'review' then
    given = {review = true, lines = {REVIEW_LINE}}
  else
    local lines = {}
    for line in string.gmatch(text, '[^\n]+') do lines[#lines + 1] = line end
    given = {version = version, lines = lines}
  end
  SEEN.given = {version, text, given}
  return given
end

-- next_for returns the job a claim by op (given: the skills lines op may
-- take from, given_lines) would take, nil if none: in each line op may
-- take from, the first job among the first ahead + 1 that fine accepts (one op did not skip); of those,
-- the one a queue's line would put first: by due time first when
-- due_first (order "due"), among the jobs that have one; else, or when
-- none has, by rank; on a tie, the lower id. The open line is INDEX.ready
-- (K.readydue) below ROUTED; in a queue that never had a routed job
-- (routed false) it is all there is. routed.seats says to look in the
-- seat lines too (Seats, above).
local function next_for(op, given, routed, due_first, ahead, fine)
  for _, kind in ipairs(due_first and {'d', 'r'} or {'r'}) do
    local index = kind == 'd' and K.readydue or INDEX.ready
    local best = nil
    if not routed then
      for _, candidate in ipairs(redis.call('ZRANGE', index, '0', int(ahead))) do
        if fine(candidate) then return candidate end
      end
    else
      -- Each candidate as its place in a line, "<score, padded>|<id>",
      -- which sort as the line does.
      -- (A review claim takes from the review line alone.)
      local open = {}
      if not given.review then
        open = redis.call('ZRANGE', index, '-inf', '(' .. int(ROUTED - 1e14), 'BYSCORE', 'LIMIT', '0', int(ahead + 1), 'WITHSCORES')
      end
      for i = 1, #open, 2 do
        if fine(open[i]) then
          best = padded(tonumber(open[i + 1])) .. '|' .. open[i]
          break
        end
      end
      -- Every line's first job, at once (K.heads); someone who skipped
      -- jobs reads each line, whose first may be one they skipped.
      local names = {}
      if not given.review then names[1] = kind .. '@' .. op end
      for _, line in ipairs(given.lines) do names[#names + 1] = kind .. line end
      -- And the seats of jobs held already that op may take (Seats,
      -- above): each line's seat line, and the open one's.
      if routed.seats and not given.review then
        for i = 1, #names do names[#names + 1] = kind .. SEAT_LINE .. string.sub(names[i], 2) end
        names[#names + 1] = kind .. SEAT_LINE
      end
      local firsts = redis.call('HMGET', K.heads, unpack(names))
      SEEN.heads = SEEN.heads or {}
      -- The best score so far, read once per place: places of other
      -- scores need no more than it (before, for equal ones).
      local top = best and tonumber(string.sub(best, 1, 17))
      for i, from in ipairs(names) do
        local first = firsts[i]
        SEEN.heads[from] = first
        -- (A seat line's first may be a job op holds: fine says.)
        if first and ahead == 0 and (i <= #given.lines + 1 or fine(id_of(first))) then
          local score = tonumber(string.sub(first, 1, 17))
          if not best or score < top or (score == top and before(first, best)) then best, top = first, score end
        elseif first then
          for _, member in ipairs(redis.call('ZRANGEBYLEX', K.routed, '[' .. from .. '|', '(' .. from .. '}', 'LIMIT', '0', int(ahead + 1))) do
            local place = string.sub(member, #from + 2)
            if fine(id_of(place)) then
              if not best or before(place, best) then best = place end
              break
            end
          end
        end
      end
      if best then best = id_of(best) end
    end
    if best then return best end
  end
  return nil
end

-- may_take reports whether op (given: the skills lines op may take
-- from) may take the job: an open one, or one routed to them, or to skills
-- they have.
local function may_take(m, op, given)
  if given.review or m.review then return given.review and m.review ~= nil end
  if m.route_to then return string.find('\n' .. m.route_to .. '\n', '\n' .. op .. '\n', 1, true) ~= nil end
  if not m.skills then return true end
  for _, line in ipairs(given.lines) do
    if line == '+' .. m.skills then return true end
  end
  return false
end

-- routes_stale reports whether the skills lines given were known by
-- another count than the queue's conf "routes_v" (seen: as read): Go must
-- read them again.
local function routes_stale(given, seen)
  return given.version ~= (seen or '0')
end

-- claim_for reserves for op the best-ranked ready job it has not skipped
-- (or the job wanted, if it is in line and not skipped by op), with a
-- fresh token. First, bounded by budget, it reclaims expired reservations
-- and promotes due scheduled jobs, so an abandoned or due job is claimable
-- at once, cron or no cron. With an idempotency key that names a live
-- reservation of op it answers that reservation again. mode "again"
-- answers only that, and claims nothing new; mode "new" says that no
-- reservation can have been made with the key yet, so none is looked for.
-- A paused queue claims nothing new ("queue_paused"), nor does one whose
-- max_held op's reservations reach ("hold_limit"). It returns "ok", the id
-- and the stored metadata; or "queue_not_found", "queue_paused",
-- "hold_limit", "empty", or "not_ready" (the job wanted is not in line for
-- op).
local function claim_for(op, given, token, budget, maxskips, key, wanted, mode)
  local now = NOW
  local conf = SEEN.claim
  if not conf then
    conf = redis.call('HMGET', K.conf, 'max_hold_seconds', 'paused', 'max_held', 'order', 'routed', 'routes_v', 'fallback_at', 'overlap', 'seats', 'overlap_at_once', 'plain', 'waiting_indexed', 'waiting_cursor')
    SEEN.claim = conf
    if SEEN.plain == nil then SEEN.plain = as_plain(conf[11], conf[12], conf[13]) end
  end
  local routed = conf[5] == '1'
  local max_hold, max_held = num(conf[1]), num(conf[3] or '0')
  if not max_hold then return 'queue_not_found' end
  if key ~= '' and mode ~= 'new' then
    local prior = claimed_with(op, key)
    if prior then return 'ok', prior, LOADED[prior].raw end
  end
  if mode == 'again' then return 'empty' end
  if given.review then
    routed = true
  elseif routed and routes_stale(given, conf[6]) then
    return 'routes'
  end
  if conf[2] == '1' then return 'queue_paused' end
  -- Most claims find nothing expired or due: a count, answered as a bare
  -- integer, is the cheapest way to know. Reclaimed before op's holdings
  -- are counted, so a reservation of op's that ran out does not count.
  -- No change expires or falls due at once, so once found clear at NOW
  -- the queue stays so for the rest of the call.
  local clear, expired, due = SEEN.clear, false, false
  if not clear and redis.call('ZCOUNT', INDEX.reserved, '-inf', int(now)) > 0 then expired = reclaim(budget) end
  if max_held > 0 and redis.call('ZLEXCOUNT', K.holding, '[' .. op .. '\n', '(' .. op .. '\v') >= max_held then
    return 'hold_limit'
  end
  if not clear then
    if redis.call('ZCOUNT', INDEX.scheduled, '-inf', int(now)) > 0 then due = promote(budget) end
    -- And preferred jobs whose people's time ran out fall back now.
    if routed and conf[7] and tonumber(conf[7]) <= now and fall_back(budget) then due = true end
    SEEN.clear = not (expired or due)
  end

  -- A joined call's claims look for skips once, and for op's only if
  -- some operator has any.
  if JOINED and SEEN.unskipped == nil then SEEN.unskipped = redis.call('EXISTS', K.skipcount) == 0 end
  local skipped = 0
  if not SEEN.unskipped then skipped = tonumber(redis.call('HGET', K.skipcount, op) or '0') end
  local function skipped_by_op(candidate)
    return skipped > 0 and redis.call('SISMEMBER', K.skips, op .. '\n' .. candidate) == 1
  end
  local function fine(candidate) return not skipped_by_op(candidate) end
  -- Only jobs this operator skipped can stand in front of the one to claim,
  -- so the first skipped+1 ready jobs always hold it (if any does).
  -- A queue that claims earliest due first (order "due") looks first
  -- among the claimable jobs with a due time, by it.
  local ahead = math.min(skipped, maxskips)
  local function best()
    if wanted ~= '' then
      if skipped_by_op(wanted) then return nil end
      if redis.call('ZSCORE', INDEX.ready, wanted) and (not routed or may_take(load(wanted), op, given)) then
        return wanted
      end
      -- Or a seat of it (Seats, above), if it has one free for op.
      local m = load(wanted)
      if m and m.seated and conf[10] == '1' and may_take(m, op, given) then return wanted end
      return nil
    end
    -- (Seats only while the queue lets them: at_once.)
    return next_for(op, given, routed and {seats = conf[9] == '1' and conf[10] == '1'}, conf[4] == 'due', ahead, fine)
  end

  -- A job of a batch being canceled may still be in line (the cancel goes
  -- in bounded steps): cancel it on the way, a bounded number per claim.
  local id, m
  for _ = 0, budget do
    id = best()
    if not id then break end
    m = load(id)
    local b = batch(m.batch)
    if m.state == 'reserved' and hold_of(m, op) then
      -- A seat of a job op holds since before its queue let several
      -- hold a job at once (a mark would have kept op off it: Seats,
      -- above): marked now, and looked past.
      not_for(id, m, op)
      skipped = skipped + 1
      ahead = math.min(skipped, maxskips)
      store(id, m)
      id = nil
    elseif not (b and b.state == 'canceled') then
      break
    else
      finish(id, m, 'canceled', 'canceled', 'system')
      store(id, m)
      id = nil
    end
  end
  if not id then
    if wanted ~= '' then return 'not_ready' end
    return 'empty'
  end

  -- A claim of a job someone holds takes a seat of it (Seats, above).
  local seated = m.state == 'reserved'
  if seated then
    m.seats = m.seats or {}
    m.seats[#m.seats + 1] = seat(m)
  end
  m.reserved_by, m.reserved_at, m.token, m.extensions, m.claim_key = op, now, token, 0, nil
  -- (Overlap, above: the queue's as it is at the claim.)
  -- A job answered before needs one more answer at least; a review's
  -- claim answers nothing (Review, below).
  if not m.review and not seated then
    local overlap = num(conf[8] or '1')
    if m.answers then overlap = math.max(overlap, m.answers + 1) end
    if overlap > 1 then m.overlap = overlap else m.overlap = nil end
  end
  -- A job's own lease never outlasts the queue's cap on a reservation.
  m.deadline = now + math.min(m.lease_seconds, max_hold) * 1000
  if key ~= '' then
    m.claim_key = key
    if filed(key) then redis.call('HSET', K.claims, op .. '\n' .. key, id) end
  end
  if seated then
    record(id, m, 'claimed', 'reserved', 'reserved', op, op)
    redis.call('ZADD', K.holding, '0', op .. '\n' .. id)
    redis.call('ZADD', INDEX.reserved, int(held_until(m)), id)
  else
    go(id, m, 'reserved', m.deadline, 'claimed', op)
  end
  SEEN.at_once = conf[10] == '1'
  if m.overlap and not m.review and SEEN.at_once then not_for(id, m, op) end
  CLAIMED = CLAIMED + 1 -- the queue's numbers (numbers.lua), counted once by effects
  return 'ok', id, store(id, m)
end

-- BODY holds each script's body, by its place among the library's
-- (scripts.go), handed its keys by part; PARTS, for those that may go in
-- a joined call, makes those from all of a queue's keys.
local BODY, PARTS = {}, {}

-- many makes several changes of one queue in turn, in one call: ALL are
-- every key of the queue, ARGV[1] how many changes, then each change's
-- script place, how many arguments it has, and those. Each change is its
-- script's body, handed its own keys only, and answers as it would alone
-- ({status, "", values...}); the call answers {"ok", effects, each
-- change's answer...}, the effects of them all once. Calls that arrive
-- together go as one (Store.sendChanges): Redis pays a call's fixed cost,
-- the clock and the queue's counts once for them all. A change that fails
-- (an error: a bug, or a job's record unreadable) ends the call there:
-- its answer is its error, those after it are not made and answer
-- {"not_made", ""} (the Store sends them again), and what the changes
-- before it did is answered as usual, without the transitions the failed
-- one had recorded. Redis keeps whatever it wrote, and the batches are
-- saved as far as it changed them.
local function many(ALL, ARGV)
  fresh()
  JOINED, NOW = true, nil
  remember()
  local count, out, at = tonumber(ARGV[1]), {'ok', ''}, 2
  -- Each script's keys by part, made once per call: no change alters them.
  local parts = {}
  for c = 1, count do
    local f, n = num(ARGV[at]), num(ARGV[at + 1])
    local keys = parts[f]
    if not keys then
      keys = PARTS[f](ALL)
      parts[f] = keys
    end
    local claimed = CLAIMED
    local ok, answered = pcall(BODY[f], keys, {unpack(ARGV, at + 2, at + 1 + n)})
    if not ok then
      if type(answered) == 'table' and answered.err then answered = answered.err end
      out[c + 2] = {err = tostring(answered)}
      for later = c + 1, count do
        out[later + 2] = {'not_made', ''}
      end
      for i = #TRANS, MARK + 1, -1 do TRANS[i] = nil end
      ENDED, FINISHED, CLAIMED = {}, {}, claimed
      break
    end
    out[c + 2] = answered
    publish()
    at = at + 2 + n
  end
  JOINED = false
  -- Every script that may be joined answers through answer, so the last
  -- change's keys hold all that the effects touch.
  out[2] = effects()
  return out
end
