-- Write result: a running task's result, in its hash's result field (asynq's ResultWriter). Unlike asynq's plain
-- HSET, a task that no longer exists (deleted by an operator) is refused, so no hash is made of a result alone.
-- KEYS[1] the task hash
-- ARGV[1] the result's bytes
-- Returns how many bytes were written; NOT_FOUND with nothing changed.
if redis.call("EXISTS", KEYS[1]) == 0 then
  return redis.error_reply("NOT_FOUND the task of " .. KEYS[1] .. " does not exist")
end
redis.call("HSET", KEYS[1], "result", ARGV[1])
return #ARGV[1]
