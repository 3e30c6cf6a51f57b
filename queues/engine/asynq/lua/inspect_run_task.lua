-- run a task now (asynq's Inspector.RunTask): a scheduled, retry, archived, completed or aggregating task leaves
-- its sorted set (an aggregating one its group, and the group the group set once empty) and becomes pending.
-- KEYS[1] asynq:{<queue>}:t:<id>    KEYS[2] pending    KEYS[3] groups (SET)
-- ARGV[1] id    ARGV[2] queue key prefix (asynq:{<queue>}:)    ARGV[3] group key prefix (asynq:{<queue>}:g:)
-- Returns 1 when run; 0 when there is no such task; -1 when it is active; -2 when it is pending already.
-- Error reply, changing nothing, when the task is missing from the set its state names.
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
local state, group = unpack(redis.call("HMGET", KEYS[1], "state", "group"))
if state == "active" then return -1 end
if state == "pending" then return -2 end
local from = state == "aggregating" and ARGV[3] .. tostring(group) or ARGV[2] .. tostring(state)
if redis.call("ZREM", from, ARGV[1]) == 0 then
  return redis.error_reply("task " .. ARGV[1] .. " is " .. tostring(state) .. " but not in " .. from)
end
if state == "aggregating" and redis.call("ZCARD", from) == 0 then redis.call("SREM", KEYS[3], group) end
redis.call("LPUSH", KEYS[2], ARGV[1])
redis.call("HSET", KEYS[1], "state", "pending")
return 1
