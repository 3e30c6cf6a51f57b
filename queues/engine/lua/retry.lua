-- retry: active -> retry, to run again at a later time after a failed attempt (or a lease that expired).
-- A failure increments the retry count and the failed counters; an error that is not a failure does neither.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] lease set    KEYS[4] retry
-- KEYS[5] processed total    KEYS[6] processed today    KEYS[7] failed total    KEYS[8] failed today
-- KEYS[9] error groups (hash)    KEYS[10] error groups by last seen (sorted set)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5] ttl of daily counters (s)    ARGV[6] id    ARGV[7] lease token    ARGV[8] retry at (ms)
-- ARGV[9] error message    ARGV[10] "1" when the attempt counts as a failure
-- ARGV[11] lease must have expired by this time (ms), or "" (the recoverer sets it)
-- ARGV[12] when the attempt's handler started (ms), or "" (into the event, for the timeline, and
-- the hash's ran_ms: how long the attempt ran, "" when unknown)
-- ARGV[13] traceback, or ""    ARGV[14] error group fingerprint, or "" (not grouped)    ARGV[15] the group's label
-- ARGV[16] most error groups kept    ARGV[17] error groups unseen this long (ms) go
-- Returns "OK"; errors NOT_FOUND, LEASE_LOST, PRECONDITION (the lease is still live).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
if ARGV[12] and ARGV[12] ~= "" then ctx.started = ARGV[12] end
local id = ARGV[6]
local key, ttype, ukey = end_attempt(ctx, KEYS[3], id, ARGV[7], ARGV[11])
if not key then return ttype end
redis.call("ZADD", KEYS[4], ARGV[8], id)
redis.call("HSET", key, "error", ARGV[9], "failed_at", ctx.now, "ran_ms", ran_ms(ctx))
record_failure(ctx, key, id, ttype, KEYS[9], KEYS[10], ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17])
if ARGV[10] == "1" then
  redis.call("HINCRBY", key, "retried", 1)
  count(ctx, KEYS[5], KEYS[6], ARGV[5], "processed", ttype)
  count(ctx, KEYS[7], KEYS[8], ARGV[5], "failed", ttype)
end
moved(ctx, key, id, ttype, "active", "retry", ARGV[9])
finish(ctx)
return "OK"
