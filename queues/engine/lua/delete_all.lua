-- delete all: every task of one state (not active) -> gone, one chunk per call so Redis never blocks long.
-- A task deleted before it succeeded fails the tasks waiting for it and its workflow, as delete_task does
-- (after_failure in _lib.lua): no dependent is left waiting for a task that is gone.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] the state's structure
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] state    ARGV[6] chunk size
-- Returns how many tasks were deleted; the caller calls again until it gets 0.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local ids = take(KEYS[3], ARGV[5], tonumber(ARGV[6]))
for _, id in ipairs(ids) do
  local key = ctx.prefix .. id
  if ARGV[5] ~= "completed" then after_failure(ctx, key, id, "deleted by " .. ctx.actor, "failed") end
  drop(ctx, key, id, redis.call("HGET", key, "type") or "", ARGV[5], "deleted by " .. ctx.actor)
end
finish(ctx)
return #ids
