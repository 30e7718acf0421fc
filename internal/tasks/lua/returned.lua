-- returned.lua: forgets that a job's batch in another queue had to learn
-- of its change (K.returns), once it was told (batch_return.lua), unless
-- it changed again since.
-- KEYS    -> returns
-- ARGV[1] -> job id
-- ARGV[2] -> when it changed, as K.returns had it when it was read
-- Output: {"ok"}
if redis.call('ZSCORE', K.returns, ARGV[1]) == ARGV[2] then redis.call('ZREM', K.returns, ARGV[1]) end
return plain('ok')
