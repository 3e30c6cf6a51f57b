-- run task now: scheduled, retry or archived -> pending (an operator action).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] scheduled    KEYS[5] retry
-- KEYS[6] archived
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor    ARGV[5] id
-- Returns "OK"; errors NOT_FOUND, PRECONDITION (pending, active or completed).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local structures = {scheduled = KEYS[4], retry = KEYS[5], archived = KEYS[6]}
local id = ARGV[5]
local key = ctx.prefix .. id
local f = redis.call("HMGET", key, "state", "type")
if not f[1] then return redis.error_reply("NOT_FOUND " .. id) end
local from = structures[f[1]]
if not from then return redis.error_reply("PRECONDITION task is " .. f[1] .. ", it cannot be run now") end
redis.call("ZREM", from, id)
to_pending(ctx, KEYS[3], key, id, f[2], f[1])
finish(ctx)
return "OK"
