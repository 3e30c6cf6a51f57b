-- Done: a task that succeeded without retention is deleted (asynq's Done), counted as processed, and its unique
-- lock released.
-- KEYS[1] active   KEYS[2] lease   KEYS[3] the task hash   KEYS[4] processed:<day>   KEYS[5] processed (total)
-- KEYS[6] the message's unique key (absent when it has none)
-- ARGV[1] task id   ARGV[2] the daily counter's expiry (unix seconds)   ARGV[3] the largest int64
-- Returns OK; NOT_FOUND / LEASE_LOST (see leave_active), with nothing changed.
local refused = leave_active(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
if refused then return refused end
redis.call("DEL", KEYS[3])
count(KEYS[4], KEYS[5], ARGV[2], ARGV[3])
unlock(KEYS[6], ARGV[1])
return redis.status_reply("OK")
