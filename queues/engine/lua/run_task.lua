-- run task now: scheduled, retry or archived -> pending (an operator action).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] scheduled    KEYS[5] retry
-- KEYS[6] archived
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor    ARGV[5] id
-- Returns "OK"; errors NOT_FOUND, PRECONDITION (pending, active or completed).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local id = ARGV[5]
local key, state, ttype, from = locate(ctx, id, {scheduled = KEYS[4], retry = KEYS[5], archived = KEYS[6]},
  "it cannot be run now")
if not key then return state end
redis.call("ZREM", from, id)
to_pending(ctx, KEYS[3], key, id, ttype, state)
finish(ctx)
return "OK"
