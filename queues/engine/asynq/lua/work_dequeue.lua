-- Dequeue: the oldest pending tasks of one queue to active, each with its own lease (asynq's dequeue, done up to
-- ARGV[3] times in one call: each task makes the same moves as asynq's one-task dequeue). Nothing while the queue
-- is paused.
-- KEYS[1] pending   KEYS[2] paused   KEYS[3] active   KEYS[4] lease
-- ARGV[1] the lease's expiry (unix seconds)   ARGV[2] the task-key prefix (asynq:{q}:t:)
-- ARGV[3] how many tasks to take at most (at least 1)
-- Returns {id, msg, id, msg, ...} of the tasks taken, oldest first: empty when the queue is paused or empty. An id
-- whose task hash is gone (or has no msg) is dropped from active and the next one taken: it holds nothing to run.
local taken = {}
if redis.call("EXISTS", KEYS[2]) == 1 then
  return taken
end
local wanted = tonumber(ARGV[3])
while #taken < 2 * wanted do
  local id = redis.call("RPOPLPUSH", KEYS[1], KEYS[3])
  if not id then
    return taken
  end
  local key = ARGV[2] .. id
  local msg = redis.call("HGET", key, "msg")
  if msg then
    redis.call("HSET", key, "state", "active")
    redis.call("HDEL", key, "pending_since")
    redis.call("ZADD", KEYS[4], ARGV[1], id)
    taken[#taken + 1] = id
    taken[#taken + 1] = msg
  else
    redis.call("LREM", KEYS[3], 1, id)
  end
end
return taken
