-- archive: active -> archived, when retries are spent or the handler skips retrying. The task is dead: its
-- unique lock is released so the same work can be submitted again, and the archive is trimmed to its limits.
-- Tasks waiting for it are archived too, and its workflow fails (after_failure in _lib.lua).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] lease set    KEYS[4] archived
-- KEYS[5] processed total    KEYS[6] processed today    KEYS[7] failed total    KEYS[8] failed today
-- KEYS[9] error groups (hash)    KEYS[10] error groups by last seen (sorted set)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5] ttl of daily counters (s)    ARGV[6] id    ARGV[7] lease token    ARGV[8] error message
-- ARGV[9] archive max size    ARGV[10] archive max age (ms)
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
release_lock(ukey, id)
redis.call("ZADD", KEYS[4], ctx.now, id)
redis.call("HSET", key, "error", ARGV[8], "failed_at", ctx.now, "ran_ms", ran_ms(ctx))
record_failure(ctx, key, id, ttype, KEYS[9], KEYS[10], ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17])
redis.call("HINCRBY", key, "retried", 1)
count(ctx, KEYS[5], KEYS[6], ARGV[5], "processed", ttype)
count(ctx, KEYS[7], KEYS[8], ARGV[5], "failed", ttype)
moved(ctx, key, id, ttype, "active", "archived", ARGV[8])
after_failure(ctx, key, id, ARGV[8], "failed")
trim_archive(ctx, KEYS[4], ARGV[9], ARGV[10])
finish(ctx)
return "OK"
