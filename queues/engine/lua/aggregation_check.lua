-- aggregation check: is a group due, and if so cut it. The cut moves the group's oldest ids (at most max size)
-- into a new aggregation set, registered with a deadline: if the aggregator dies before aggregation_done, the
-- set is reclaimed back into the group after the deadline (aggregation_reclaim). The tasks stay aggregating.
-- A group is due when it holds max size tasks, when its oldest task waited max delay, or when no task joined it
-- for the grace period. An empty group is forgotten.
-- KEYS[1] the group's sorted set    KEYS[2] set of group names    KEYS[3] aggregation sets (sorted by deadline)
-- KEYS[4] the new aggregation set
-- ARGV[1] group name    ARGV[2] now (ms)    ARGV[3] grace period (ms)    ARGV[4] max delay (ms, 0: none)
-- ARGV[5] max size (0: none)    ARGV[6] deadline of the new set (ms)    ARGV[7] the new set's id
-- Returns how many tasks were cut into the set (0: not due). Error PRECONDITION when the set exists already.
local now, grace, max_delay, max_size = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if redis.call("EXISTS", KEYS[4]) == 1 then return redis.error_reply("PRECONDITION aggregation set exists") end
local size = redis.call("ZCARD", KEYS[1])
if size == 0 then
  redis.call("SREM", KEYS[2], ARGV[1])
  return 0
end
local due = max_size > 0 and size >= max_size
if not due and max_delay > 0 then
  local oldest = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
  due = tonumber(oldest[2]) + max_delay <= now
end
if not due then
  local newest = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
  due = tonumber(newest[2]) + grace <= now
end
if not due then return 0 end
local limit = max_size > 0 and max_size or size
local cut = redis.call("ZRANGE", KEYS[1], 0, limit - 1, "WITHSCORES")
zadd_scored(KEYS[4], cut)
redis.call("ZREMRANGEBYRANK", KEYS[1], 0, limit - 1)
if redis.call("EXISTS", KEYS[1]) == 0 then redis.call("SREM", KEYS[2], ARGV[1]) end
redis.call("ZADD", KEYS[3], ARGV[6], ARGV[7])
return #cut / 2
