-- delete expired completed: completed -> gone once the retention has passed (the janitor), up to a limit. A task
-- an operator acted on (marked by mark_kept in _lib.lua) leaves a record first (leave_record).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] completed
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] most tasks to delete
-- Returns how many tasks were deleted.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local ids = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", ctx.now, "LIMIT", 0, tonumber(ARGV[5]))
for _, id in ipairs(ids) do
  local key = ctx.prefix .. id
  redis.call("ZREM", KEYS[3], id)
  local f = redis.call("HMGET", key, "type", "keep")
  if f[2] then leave_record(ctx, key, id, f[1] or "", f[2], "expired") end
  drop(ctx, key, id, f[1] or "", "completed", "retention ended")
end
finish(ctx)
return #ids
