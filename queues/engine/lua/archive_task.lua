-- archive task: pending, scheduled or retry -> archived (an operator action). The task is dead, so its unique
-- lock is released, as when a worker archives it; the archive is trimmed after. Tasks waiting for it are
-- archived too, and its workflow fails (after_failure in _lib.lua).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] scheduled    KEYS[5] retry
-- KEYS[6] archived
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor    ARGV[5] id
-- ARGV[6] archive max size    ARGV[7] archive max age (ms)
-- Returns "OK"; errors NOT_FOUND, PRECONDITION (active, archived or completed).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local id = ARGV[5]
local key, state, ttype, from = locate(ctx, id, {pending = KEYS[3], scheduled = KEYS[4], retry = KEYS[5]},
  "it cannot be archived")
if not key then return state end
remove_from(from, state, id)
release_unique(key, id)
redis.call("ZADD", KEYS[6], ctx.now, id)
moved(ctx, key, id, ttype, state, "archived", "archived by " .. ctx.actor)
after_failure(ctx, key, id, "archived by " .. ctx.actor, "failed")
trim_archive(ctx, KEYS[6], ARGV[6], ARGV[7])
finish(ctx)
return "OK"
