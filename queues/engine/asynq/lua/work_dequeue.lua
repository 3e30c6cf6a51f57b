-- Dequeue: the oldest pending task of one queue to active, with a lease (asynq's dequeue). Nothing while the queue
-- is paused.
-- KEYS[1] pending   KEYS[2] paused   KEYS[3] active   KEYS[4] lease
-- ARGV[1] the lease's expiry (unix seconds)   ARGV[2] the task-key prefix (asynq:{q}:t:)
-- Returns {task id, msg}, or nil when the queue is paused or empty. An id whose task hash is gone (or has no msg)
-- is dropped from active and the next one taken: it holds nothing to run.
if redis.call("EXISTS", KEYS[2]) == 1 then
  return nil
end
while true do
  local id = redis.call("RPOPLPUSH", KEYS[1], KEYS[3])
  if not id then
    return nil
  end
  local key = ARGV[2] .. id
  local msg = redis.call("HGET", key, "msg")
  if msg then
    redis.call("HSET", key, "state", "active")
    redis.call("HDEL", key, "pending_since")
    redis.call("ZADD", KEYS[4], ARGV[1], id)
    return {id, msg}
  end
  redis.call("LREM", KEYS[3], 1, id)
end
