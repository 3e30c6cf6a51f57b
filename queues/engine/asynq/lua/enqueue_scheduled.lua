-- enqueue scheduled: a new task -> scheduled, to be moved to pending by a forwarder at its process time.
-- KEYS[1] the task hash    KEYS[2] the queue's scheduled sorted set
-- ARGV[1] the encoded message (msg)    ARGV[2] process time, Unix seconds (the score)    ARGV[3] task id
-- Returns 1 when scheduled, 0 when a task of that id exists in the queue (nothing written).
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "scheduled")
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[3])
return 1
