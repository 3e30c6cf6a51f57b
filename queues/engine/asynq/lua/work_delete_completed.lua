-- Delete expired completed: tasks whose retention ended are deleted (asynq's janitor), a batch per call.
-- KEYS[1] completed
-- ARGV[1] now (unix seconds)   ARGV[2] the task-key prefix   ARGV[3] most tasks to delete
-- Returns how many were deleted.
local ids = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1], "LIMIT", 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call("DEL", ARGV[2] .. id)
  redis.call("ZREM", KEYS[1], id)
end
return #ids
