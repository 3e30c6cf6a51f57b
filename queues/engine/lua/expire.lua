-- expire: active -> gone, for a task handed out after its deadline (an HTTP publisher's TTL): nobody consumed it
-- in time, so it is dropped rather than run late. Fenced by the lease token of the dequeue that found it; releases
-- its unique lock; counts neither as processed nor as failed. The event says "expired", so the drop is visible.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] lease set
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] id    ARGV[6] lease token    ARGV[7] reason
-- Returns "OK"; errors NOT_FOUND, LEASE_LOST.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local id = ARGV[5]
local key, ttype, ukey = end_attempt(ctx, KEYS[3], id, ARGV[6])
if not key then return ttype end
release_lock(ukey, id)
redis.call("DEL", key)
moved(ctx, key, id, ttype, "active", "", ARGV[7], "expired")
finish(ctx)
return "OK"
