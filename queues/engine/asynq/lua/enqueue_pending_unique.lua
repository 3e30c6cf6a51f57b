-- enqueue pending unique: a new task -> pending, holding its unique lock (type and payload digest) for a TTL.
-- The lock is looked at before the id, so a duplicate is reported as such even when its id is taken too; either
-- refusal writes nothing (asynq's client would have taken the lock before finding the id taken).
-- KEYS[1] the unique lock    KEYS[2] the task hash    KEYS[3] the queue's pending list
-- ARGV[1] task id (the lock's value)    ARGV[2] lock TTL, whole seconds    ARGV[3] the encoded message (msg)
-- ARGV[4] now, Unix nanoseconds (pending_since)
-- Returns 1 when enqueued, -1 when the lock is held (a duplicate), 0 when the id exists in the queue.
if redis.call("EXISTS", KEYS[1]) == 1 then return -1 end
if redis.call("EXISTS", KEYS[2]) == 1 then return 0 end
redis.call("SET", KEYS[1], ARGV[1], "EX", ARGV[2])
redis.call("HSET", KEYS[2], "msg", ARGV[3], "state", "pending", "pending_since", ARGV[4], "unique_key", KEYS[1])
redis.call("LPUSH", KEYS[3], ARGV[1])
return 1
