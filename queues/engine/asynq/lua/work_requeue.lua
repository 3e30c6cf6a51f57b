-- Requeue: a task still running at shutdown goes back to the head of pending (asynq's Requeue), next to run. Like
-- asynq, it writes no pending_since.
-- KEYS[1] active   KEYS[2] lease   KEYS[3] pending   KEYS[4] the task hash
-- ARGV[1] task id
-- Returns OK; NOT_FOUND / LEASE_LOST (see leave_active), with nothing changed.
local id = ARGV[1]
local refused = leave_active(KEYS[1], KEYS[2], KEYS[4], id)
if refused then
  return refused
end
redis.call("RPUSH", KEYS[3], id)
redis.call("HSET", KEYS[4], "state", "pending")
return redis.status_reply("OK")
