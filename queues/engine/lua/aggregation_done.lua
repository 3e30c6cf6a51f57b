-- aggregation done: an aggregation set -> one new pending task, the combined one, and the set's tasks -> gone,
-- in one step: the combined task exists exactly when the set is gone. Refused when the set was reclaimed (its
-- deadline passed and its tasks went back to their group), so a slow aggregator never aggregates twice.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] aggregation sets
-- KEYS[5] the aggregation set
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] the set's id    ARGV[6] combined task id    ARGV[7] its type    ARGV[8] its options (msg)
-- ARGV[9] its payload
-- Returns "OK"; errors NOT_FOUND (the set is gone), CONFLICT (the combined task's id exists).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
if not redis.call("ZSCORE", KEYS[4], ARGV[5]) or redis.call("EXISTS", KEYS[5]) == 0 then
  return redis.error_reply("NOT_FOUND aggregation set " .. ARGV[5])
end
local id = ARGV[6]
local key = ctx.prefix .. id
if redis.call("EXISTS", key) == 1 then return redis.error_reply("CONFLICT " .. id) end
for _, member in ipairs(redis.call("ZRANGE", KEYS[5], 0, -1)) do
  local mkey = ctx.prefix .. member
  local ttype = redis.call("HGET", mkey, "type")
  if ttype then
    redis.call("DEL", mkey)
    moved(ctx, mkey, member, ttype, "aggregating", "", "aggregated into " .. id, "aggregated")
  end
end
redis.call("DEL", KEYS[5])
redis.call("ZREM", KEYS[4], ARGV[5])
redis.call("HSET", key, "type", ARGV[7], "msg", ARGV[8], "payload", ARGV[9])
to_pending(ctx, KEYS[3], key, id, ARGV[7], "")
finish(ctx)
return "OK"
