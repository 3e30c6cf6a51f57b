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

-- The task's new place: member of the sorted set `zset` at `score`, its hash holding the new msg and state.
local function file_under(zset, score, task_key, msg, state, id)
  redis.call("ZADD", zset, score, id)
  redis.call("HSET", task_key, "msg", msg, "state", state)
end

-- One more on a daily counter (the first of the day sets its expiry: asynq keeps 90 days of them) and on its
-- running total (which starts again at 1 once it reaches the largest int64, as asynq's does).
local function count(day_key, total_key, expire_at, max)
  if redis.call("INCR", day_key) == 1 then
    redis.call("EXPIREAT", day_key, expire_at)
  end
  if redis.call("GET", total_key) == max then
    redis.call("SET", total_key, 1)
  else
    redis.call("INCR", total_key)
  end
end

-- Release a unique lock when this task holds it (another task may hold the key by now: left alone).
local function unlock(key, id)
  if key and redis.call("GET", key) == id then
    redis.call("DEL", key)
  end
end
