-- Requeue: a task still running at shutdown goes back to the head of pending (asynq's Requeue), next to run. Like
-- asynq, it writes no pending_since.
-- KEYS[1] active   KEYS[2] lease   KEYS[3] pending   KEYS[4] the task hash
-- ARGV[1] task id
-- Returns OK; NOT_FOUND / LEASE_LOST (see leave_active), with nothing changed.
local refused = leave_active(KEYS[1], KEYS[2], KEYS[4], ARGV[1])
if refused then return refused end
redis.call("RPUSH", KEYS[3], ARGV[1])
redis.call("HSET", KEYS[4], "state", "pending")
return redis.status_reply("OK")
