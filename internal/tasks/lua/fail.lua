-- fail.lua: the holder reports the job failed (fenced by token); it goes back
-- in line for another attempt, or dead when its attempts are used up.
-- KEYS    -> the queue's keys (see lib.lua)
-- ARGV[1] -> now in ms (empty: use Redis TIME)
-- ARGV[2] -> job id
-- ARGV[3] -> reservation token
-- ARGV[4] -> reason
-- Output: {"not_found"}, {"reservation_lost"}, or {"ok", id, metadata, payload}
local now = clock(ARGV[1])
local id = ARGV[2]
local m, err = held(id, ARGV[3], now)
if not m then return {err} end
spend_attempt(id, m, now, ARGV[4])
return reply(id, store(id, m))
