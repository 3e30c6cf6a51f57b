-- Mark as complete: a task that succeeded with retention is kept in completed until its retention ends (asynq's
-- MarkAsComplete), counted as processed, and its unique lock released.
-- KEYS[1] active   KEYS[2] lease   KEYS[3] completed   KEYS[4] the task hash   KEYS[5] processed:<day>
-- KEYS[6] processed (total)   KEYS[7] the message's unique key (absent when it has none)
-- ARGV[1] task id   ARGV[2] the daily counter's expiry   ARGV[3] the end of retention (unix seconds)
-- ARGV[4] the message with its completion time   ARGV[5] the largest int64
-- Returns OK; NOT_FOUND / LEASE_LOST (see leave_active), with nothing changed.
local refused = leave_active(KEYS[1], KEYS[2], KEYS[4], ARGV[1])
if refused then return refused end
file_under(KEYS[3], ARGV[3], KEYS[4], ARGV[4], "completed", ARGV[1])
count(KEYS[5], KEYS[6], ARGV[2], ARGV[5])
unlock(KEYS[7], ARGV[1])
return redis.status_reply("OK")
