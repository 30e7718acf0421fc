-- complete.lua: the holder finishes a reserved job with a result that
-- fits the queue's outcome form (complete_held, lib.lua, says how).
-- BUDGET complete: 16 commands
--   (no webhook listening: TIME, HGET meta, the outcome form's and the
--   outbox flag's HMGET, the tally's HGET and HSET, HDEL drafts, ZREM
--   holding and reserved, ZADD completed, HSET meta, HGET payload, five
--   ZCARDs)
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
-- ARGV[8] -> for a last answer to a job with overlap (lib.lua, Overlap):
--            how many answers before it were agreed ("": none), and
--            ARGV[9] their agreement JSON, ARGV[10] the result they agree
--            on, ARGV[11] the lowest share agreed, ARGV[12] each
--            answerer, "=1" if they agreed with the majority else "=0",
--            one per line
-- ARGV[13] -> a roll in [0, 1): the completion goes to review when it is
--            below the queue's review_fraction (lib.lua, Review)
-- ARGV[14] -> "1": the holder is in training (their completion goes to
--            review)
-- ARGV[15] -> "approve": a reviewer approves the job they hold for review
--            (its result, if empty, the one waiting); "": a completion
-- Output: {"not_found"}, {"reservation_lost"}, {"forbidden"}, {"form",
--         the form as stored} (another form than the one checked
--         against), {"unfit"} (the result does not fit the form),
--         {"answers", the answers with this one} (the last answer to a
--         job with overlap, not agreed as ARGV[8] says),
--         {"invalid_state"} (a review's reservation completed, or one that
--         is not a review's approved), or
--         {"ok", id, metadata, payload, the result kept}: a retry answers
--         the result sent first
clock(ARGV[1])
local id = ARGV[2]
local status, raw, kept = complete_held(id, ARGV)
if status == 'ok' or status == 'again' then return reply(id, raw, kept) end
return raw
