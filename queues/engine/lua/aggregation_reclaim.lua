-- aggregation reclaim: an aggregation set whose deadline passed (its aggregator died between the cut and
-- aggregation_done) -> its tasks back into their group, with their original scores, so nothing is lost and the
-- next check cuts them again.
-- KEYS[1] aggregation sets    KEYS[2] the aggregation set    KEYS[3] the group's sorted set
-- KEYS[4] set of group names
-- ARGV[1] the set's id    ARGV[2] group name    ARGV[3] now (ms)
-- Returns how many tasks went back. Errors NOT_FOUND (no such set), PRECONDITION (its deadline has not passed).
local deadline = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not deadline then return redis.error_reply("NOT_FOUND aggregation set " .. ARGV[1]) end
if tonumber(deadline) > tonumber(ARGV[3]) then return redis.error_reply("PRECONDITION deadline not passed") end
local back = redis.call("ZRANGE", KEYS[2], 0, -1, "WITHSCORES")
zadd_scored(KEYS[3], back)
if #back > 0 then redis.call("SADD", KEYS[4], ARGV[2]) end
redis.call("DEL", KEYS[2])
redis.call("ZREM", KEYS[1], ARGV[1])
return #back / 2
