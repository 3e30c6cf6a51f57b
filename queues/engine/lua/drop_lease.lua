-- drop orphaned lease: a lease entry whose task hash is gone -> removed. Nothing can be retried for it; the
-- recoverer clears such entries so they do not come back every round. Not expected in normal operation (an
-- active task cannot be deleted), but a hand-deleted hash must not wedge recovery.
-- KEYS[1] lease set
-- ARGV[1] task key prefix    ARGV[2] id
-- Returns "OK"; error PRECONDITION when the task exists after all.
if redis.call("EXISTS", ARGV[1] .. ARGV[2]) == 1 then return redis.error_reply("PRECONDITION task exists") end
redis.call("ZREM", KEYS[1], ARGV[2])
return "OK"
