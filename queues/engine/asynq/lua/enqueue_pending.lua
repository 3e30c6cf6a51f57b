-- enqueue pending: a new task -> pending, as asynq's client enqueues one to run now.
-- KEYS[1] the task hash    KEYS[2] the queue's pending list
-- ARGV[1] the encoded message (msg)    ARGV[2] task id    ARGV[3] now, Unix nanoseconds (pending_since)
-- Returns 1 when enqueued, 0 when a task of that id exists in the queue (nothing written).
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "pending", "pending_since", ARGV[3])
redis.call("LPUSH", KEYS[2], ARGV[2])
return 1
