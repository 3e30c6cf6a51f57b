-- Helpers of the asynq worker's transitions (work_*.lua), put in front of each of them.

-- Take task `id` off the active list and the lease set, or refuse with nothing changed: NOT_FOUND when its hash
-- is gone, LEASE_LOST when the task is there but no longer active with a lease (a recoverer or an operator moved
-- it). Returns the error reply to return, or nil when the task was taken. Both are read before either is written,
-- so a refusal never leaves the task half moved.
local function leave_active(active, lease, task_key, id)
  if redis.call("EXISTS", task_key) == 0 then
    return redis.error_reply("NOT_FOUND task " .. id .. " does not exist")
  end
  if not redis.call("ZSCORE", lease, id) or redis.call("LREM", active, 0, id) == 0 then
    return redis.error_reply("LEASE_LOST task " .. id .. " is no longer active")
  end
  redis.call("ZREM", lease, id)
  return nil
end

-- One more on a daily counter; the first of the day sets its expiry (asynq keeps 90 days of them).
local function count_day(key, expire_at)
  if redis.call("INCR", key) == 1 then
    redis.call("EXPIREAT", key, expire_at)
  end
end

-- One more on a running total, which starts again at 1 once it reaches the largest int64, as asynq's does.
local function count_total(key, max)
  if redis.call("GET", key) == max then
    redis.call("SET", key, 1)
  else
    redis.call("INCR", key)
  end
end

-- Release a unique lock when this task holds it (another task may hold the key by now: left alone).
local function unlock(key, id)
  if key and redis.call("GET", key) == id then
    redis.call("DEL", key)
  end
end
