-- forward: scheduled or retry -> pending, for tasks whose time has come (up to a limit per call).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] source set (scheduled or retry)    KEYS[4] pending
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] source state name    ARGV[6] most tasks to move
-- Returns how many tasks moved; the caller calls again while that equals the limit.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local ids = redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", ctx.now, "LIMIT", 0, tonumber(ARGV[6]))
for _, id in ipairs(ids) do
  local key = ctx.prefix .. id
  redis.call("ZREM", KEYS[3], id)
  to_pending(ctx, KEYS[4], key, id, redis.call("HGET", key, "type") or "", ARGV[5])
end
finish(ctx)
return #ids
