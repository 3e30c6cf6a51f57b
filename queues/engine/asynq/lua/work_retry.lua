-- Retry: a failed task waits in retry until its next attempt (asynq's Retry); counted as processed and failed
-- unless the error is not a failure.
-- KEYS[1] the task hash   KEYS[2] active   KEYS[3] lease   KEYS[4] retry   KEYS[5] processed:<day>
-- KEYS[6] failed:<day>   KEYS[7] processed (total)   KEYS[8] failed (total)
-- ARGV[1] task id   ARGV[2] the message with the error   ARGV[3] the next attempt (unix seconds)
-- ARGV[4] the daily counters' expiry   ARGV[5] 1 when it counts as a failure, else 0   ARGV[6] the largest int64
-- Returns OK; NOT_FOUND / LEASE_LOST (see leave_active), with nothing changed.
local refused = leave_active(KEYS[2], KEYS[3], KEYS[1], ARGV[1])
if refused then return refused end
file_under(KEYS[4], ARGV[3], KEYS[1], ARGV[2], "retry", ARGV[1])
if ARGV[5] == "1" then
  count(KEYS[5], KEYS[7], ARGV[4], ARGV[6])
  count(KEYS[6], KEYS[8], ARGV[4], ARGV[6])
end
return redis.status_reply("OK")
