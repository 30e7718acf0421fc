-- complete_next.lua: the holder finishes a reserved job with a result that
-- fits the queue's outcome form (complete_held, lib.lua) and,
-- in the same call, claims the next job of the queue (claim_for, lib.lua):
-- the loop of a person working a queue, in one call. The next claim is
-- made with the key "next " and the completed job's id (an engine's key,
-- see filed in lib.lua), so a retry whose answer was lost answers the same
-- next reservation while it lasts, and claims nothing new.
-- BUDGET complete & next: 27 commands
--   (a complete's 16 less its counts and the next claim's 18 less its TIME
--   and counts, then the five ZCARDs once; both payloads read with one
--   HMGET)
-- BUDGET 4 complete & next joined: 69 commands
--   (in one call of many, lib.lua: 14 each, without the skips' HGET, the
--   drafts' HDEL and the claims' HINCRBY; then once the TIME, the
--   settings' two HMGETs, the two ZCOUNTs, an EXISTS each for skips and
--   drafts, the HINCRBY of four claims and the five ZCARDs)
-- KEYS    -> conf, ready, scheduled, reserved, completed, dead, canceled,
--            meta, payload, result, skips, skipcount, batches, batchdone,
--            parked, claims, holding, people, waiting, outbox, drafts, sla,
--            late, readydue, returns, routed, routes, fallback, heads
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> holder: the user acting
-- ARGV[5] -> result JSON (empty: none)
-- ARGV[6] -> the SHA-1 of the outcome form the result was checked against
--            ("" for none)
-- ARGV[7] -> "1" if the result fits that form
-- ARGV[8] to ARGV[15] -> a last answer's agreement, the review's roll,
--            training and mode, as complete.lua's
-- ARGV[16] -> fresh reservation token for the next job
-- ARGV[17] -> most expired reservations to reclaim and scheduled jobs to promote
-- ARGV[18] -> most skipped jobs to look past
-- ARGV[19], ARGV[20] -> the skills lines the holder may take from, as
--            claim.lua's ARGV[9] and ARGV[10]
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"}, {"form", the
--         form as stored}, {"unfit"}, {"answers", the answers},
--         {"invalid_state"} (as complete.lua), or {"ok", id,
--         metadata, payload, the result kept, next id, next metadata, next
--         payload, why there is no next} (the next three empty when no
--         job was claimed, and why: "empty", "queue_paused", "hold_limit",
--         or "routes": the skills lines given were not the queue's)
clock(ARGV[1])
local id, holder = ARGV[2], ARGV[4]
local status, raw, kept = complete_held(id, ARGV)
if status ~= 'ok' and status ~= 'again' then return raw end
-- A first completion cannot have claimed before; a retry only answers
-- what the first one claimed.
local mode = 'new'
if status == 'again' then mode = 'again' end
local claimed, next_id, next_raw = claim_for(holder, given_lines(ARGV[19], ARGV[20]), ARGV[16], num(ARGV[17]), num(ARGV[18]),
  'next ' .. id, '', mode)
if claimed ~= 'ok' then return reply(id, raw, kept, '', '', '', claimed) end
-- Both payloads with one command.
local payloads = redis.call('HMGET', K.payload, id, next_id)
return answer('ok', id, raw, payloads[1], kept, next_id, next_raw, payloads[2], '')
