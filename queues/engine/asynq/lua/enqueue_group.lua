-- enqueue group: a new task -> aggregating, in its group's sorted set (scored by when it came) until a server's
-- aggregator cuts the group into one task; the group's name joins the queue's set of groups.
-- KEYS[1] the task hash    KEYS[2] the group's sorted set    KEYS[3] the queue's set of group names
-- ARGV[1] the encoded message (msg)    ARGV[2] task id    ARGV[3] now, Unix seconds (the score)
-- ARGV[4] group name
-- Returns 1 when added, 0 when a task of that id exists in the queue (nothing written).
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "aggregating", "group", ARGV[4])
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[2])
redis.call("SADD", KEYS[3], ARGV[4])
return 1
