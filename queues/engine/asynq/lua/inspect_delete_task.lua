-- delete a task (asynq's Inspector.DeleteTask): any task but an active one leaves its list or set (an aggregating
-- one its group, and the group the group set once empty), its hash is deleted, and the unique lock it holds, if
-- it still holds it, is released.
-- KEYS[1] asynq:{<queue>}:t:<id>    KEYS[2] groups (SET)
-- ARGV[1] id    ARGV[2] queue key prefix (asynq:{<queue>}:)    ARGV[3] group key prefix (asynq:{<queue>}:g:)
-- Returns 1 when deleted; 0 when there is no such task; -1 when it is active.
-- Error reply, changing nothing, when the task is missing from the list or set its state names.
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
local state, group, unique = unpack(redis.call("HMGET", KEYS[1], "state", "group", "unique_key"))
if state == "active" then return -1 end
local where, gone
if state == "pending" then
  where = ARGV[2] .. state
  gone = redis.call("LREM", where, 0, ARGV[1])
elseif state == "aggregating" then
  where = ARGV[3] .. tostring(group)
  gone = redis.call("ZREM", where, ARGV[1])
  if gone == 1 and redis.call("ZCARD", where) == 0 then redis.call("SREM", KEYS[2], group) end
else
  where = ARGV[2] .. tostring(state)
  gone = redis.call("ZREM", where, ARGV[1])
end
if gone == 0 then
  return redis.error_reply("task " .. ARGV[1] .. " is " .. tostring(state) .. " but not in " .. where)
end
if unique and unique ~= "" and redis.call("GET", unique) == ARGV[1] then redis.call("DEL", unique) end
return redis.call("DEL", KEYS[1])
