-- enqueue group unique: a new task -> aggregating in its group, holding its unique lock for a TTL. As asynq
-- writes it, the hash of an aggregating task does not name its lock (the message does).
-- The lock is looked at before the id (a duplicate is reported as such); either refusal writes nothing.
-- KEYS[1] the task hash    KEYS[2] the group's sorted set    KEYS[3] the queue's set of group names
-- KEYS[4] the unique lock
-- ARGV[1] the encoded message (msg)    ARGV[2] task id (the lock's value)    ARGV[3] now, Unix seconds (the score)
-- ARGV[4] group name    ARGV[5] lock TTL, whole seconds
-- Returns 1 when added, -1 when the lock is held (a duplicate), 0 when the id exists in the queue.
if redis.call("EXISTS", KEYS[4]) == 1 then return -1 end
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("SET", KEYS[4], ARGV[2], "EX", ARGV[5])
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "aggregating", "group", ARGV[4])
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[2])
redis.call("SADD", KEYS[3], ARGV[4])
return 1
