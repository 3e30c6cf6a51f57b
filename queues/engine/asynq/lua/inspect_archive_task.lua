-- archive a task now (asynq's Inspector.ArchiveTask): a pending, scheduled, retry, completed or aggregating task
-- moves to the archive, scored by now; then the archive is trimmed as asynq trims it (entries older than the
-- cutoff go, and the oldest beyond the size limit).
-- KEYS[1] asynq:{<queue>}:t:<id>    KEYS[2] archived    KEYS[3] groups (SET)
-- ARGV[1] id    ARGV[2] now (Unix seconds)    ARGV[3] cutoff (Unix seconds)    ARGV[4] archive size limit
-- ARGV[5] queue key prefix (asynq:{<queue>}:)    ARGV[6] group key prefix (asynq:{<queue>}:g:)
-- Returns 1 when archived; 0 when there is no such task; -1 when it is archived already; -2 when it is active.
-- Error reply, changing nothing, when the task is missing from the list or set its state names.
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
local state, group = unpack(redis.call("HMGET", KEYS[1], "state", "group"))
if state == "active" then return -2 end
if state == "archived" then return -1 end
local from, removed
if state == "pending" then
  from = ARGV[5] .. state
  removed = redis.call("LREM", from, 1, ARGV[1])
else
  from = state == "aggregating" and ARGV[6] .. tostring(group) or ARGV[5] .. tostring(state)
  removed = redis.call("ZREM", from, ARGV[1])
end
if removed == 0 then
  return redis.error_reply("task " .. ARGV[1] .. " is " .. tostring(state) .. " but not in " .. from)
end
if state == "aggregating" and redis.call("ZCARD", from) == 0 then redis.call("SREM", KEYS[3], group) end
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
redis.call("HSET", KEYS[1], "state", "archived")
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", ARGV[3])
redis.call("ZREMRANGEBYRANK", KEYS[2], 0, -tonumber(ARGV[4]))
return 1
