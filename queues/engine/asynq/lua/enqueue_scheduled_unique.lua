-- enqueue scheduled unique: a new task -> scheduled, holding its unique lock until a TTL past its process time.
-- The lock is looked at before the id (a duplicate is reported as such); either refusal writes nothing.
-- KEYS[1] the unique lock    KEYS[2] the task hash    KEYS[3] the queue's scheduled sorted set
-- ARGV[1] task id (the lock's value)    ARGV[2] lock TTL, whole seconds    ARGV[3] process time, Unix seconds
-- ARGV[4] the encoded message (msg)
-- Returns 1 when scheduled, -1 when the lock is held (a duplicate), 0 when the id exists in the queue.
if redis.call("EXISTS", KEYS[1]) == 1 then return -1 end
if redis.call("EXISTS", KEYS[2]) == 1 then return 0 end
redis.call("SET", KEYS[1], ARGV[1], "EX", ARGV[2])
redis.call("HSET", KEYS[2], "msg", ARGV[4], "state", "scheduled", "unique_key", KEYS[1])
redis.call("ZADD", KEYS[3], ARGV[3], ARGV[1])
return 1
