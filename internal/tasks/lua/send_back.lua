-- send_back.lua: a reviewer sends back the job they hold for review, with
-- a note (lib.lua, Review). The result that waited is dropped. A job with
-- overlap goes back in line for one more answer, from someone who has not
-- held it; any other job goes back to its author first, until the time
-- given (preferred, as routing's fallback: lib.lua, Routing), then to
-- anyone who may take it; with no time (the author is away), to anyone at
-- once. The author may take it again: their mark goes.
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the reviewer
-- ARGV[5] -> the note
-- ARGV[6] -> how long (ms) the author alone may take it ("": nobody waits
--            for them)
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"},
--         {"invalid_state"} (not held for review), or {"ok", id,
--         metadata, payload}
clock(ARGV[1])
local id, reviewer = ARGV[2], ARGV[4]
local m, done = take(id, ARGV[3], reviewer, 'sent_back')
if not m then return done end
if not m.review then return answer('invalid_state') end
redis.call('HDEL', K.result, id .. '\nreview')
local author = m.author
review_tally(author, 'sent_back')
m.review, m.author = nil, nil
if m.answers then
  -- One more answer will be agreed with the others.
  redis.call('HDEL', K.result, id .. '\nagreement')
else
  forget_skip(id, m, author)
  if ARGV[6] ~= '' then
    m.route_to, m.fallback_at = author, NOW + tonumber(ARGV[6])
    note_fallback(id, m.fallback_at)
  end
end
back_in_line(id, m, 'sent_back', reviewer, ARGV[5])
return reply(id, store(id, m))
