-- Archive: a task that failed for good is kept in archived (asynq's Archive), counted as processed and failed.
-- The archive is trimmed as asynq trims it: tasks archived before the cutoff go, and so do the oldest beyond its
-- size (asynq's rank arithmetic, kept as it is: ZRANGE 0 -max leaves max - 1), their hashes with them.
-- KEYS[1] the task hash   KEYS[2] active   KEYS[3] lease   KEYS[4] archived   KEYS[5] processed:<day>
-- KEYS[6] failed:<day>   KEYS[7] processed (total)   KEYS[8] failed (total)
-- ARGV[1] task id   ARGV[2] the message with the error   ARGV[3] now (unix seconds)   ARGV[4] the age cutoff
-- ARGV[5] the archive's size   ARGV[6] the daily counters' expiry   ARGV[7] the largest int64
-- ARGV[8] the task-key prefix (asynq:{q}:t:)
-- Returns OK; NOT_FOUND / LEASE_LOST (see leave_active), with nothing changed.
local refused = leave_active(KEYS[2], KEYS[3], KEYS[1], ARGV[1])
if refused then return refused end
file_under(KEYS[4], ARGV[3], KEYS[1], ARGV[2], "archived", ARGV[1])
local function drop(ids)
  for _, old in ipairs(ids) do
    redis.call("DEL", ARGV[8] .. old)
    redis.call("ZREM", KEYS[4], old)
  end
end
drop(redis.call("ZRANGEBYSCORE", KEYS[4], "-inf", ARGV[4]))
drop(redis.call("ZRANGE", KEYS[4], 0, -tonumber(ARGV[5])))
count(KEYS[5], KEYS[7], ARGV[6], ARGV[7])
count(KEYS[6], KEYS[8], ARGV[6], ARGV[7])
return redis.status_reply("OK")
