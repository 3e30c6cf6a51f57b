-- Forward: due tasks of scheduled or retry to pending, or to their aggregation group (asynq's forwarder), a
-- bounded number per call.
-- KEYS[1] scheduled or retry   KEYS[2] pending   KEYS[3] groups (the queue's set of group names)
-- ARGV[1] now (unix seconds)   ARGV[2] the task-key prefix   ARGV[3] now (unix ns)   ARGV[4] the group-key prefix
-- ARGV[5] most tasks to move
-- Returns how many moved. A task of a group is also named in the groups set (asynq's forwarder leaves that to the
-- next task added to the group; the aggregator finds groups there).
local ids = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1], "LIMIT", 0, tonumber(ARGV[5]))
for _, id in ipairs(ids) do
  local key = ARGV[2] .. id
  local group = redis.call("HGET", key, "group")
  redis.call("ZREM", KEYS[1], id)
  if group and group ~= "" then
    redis.call("ZADD", ARGV[4] .. group, ARGV[1], id)
    redis.call("SADD", KEYS[3], group)
    redis.call("HSET", key, "state", "aggregating")
  else
    redis.call("LPUSH", KEYS[2], id)
    redis.call("HSET", key, "state", "pending", "pending_since", ARGV[3])
  end
end
return #ids
