-- enqueue group: new tasks -> aggregating, in one group of the queue (asynq's groups). Each task waits in the
-- group's sorted set, scored by when it was enqueued, until the aggregator cuts the group into one task.
-- All-or-nothing: every id is checked before anything is written.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] the group's sorted set    KEYS[4] set of group names
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] group name    ARGV[6..] 4 values per task: id, type, options (msg), payload
-- Returns "OK", or "NEW" when the queue had no event stream yet. Error "CONFLICT <i>" when task i's id exists.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local WIDTH, FIRST = 4, 6
local n = (#ARGV - FIRST + 1) / WIDTH
local conflict = first_conflict(ctx, FIRST, WIDTH, n)
if conflict then return redis.error_reply("CONFLICT " .. conflict) end
local new_queue = redis.call("EXISTS", KEYS[2]) == 0
for i = 0, n - 1 do
  local a = FIRST + i * WIDTH
  local id, ttype = ARGV[a], ARGV[a + 1]
  redis.call("ZADD", KEYS[3], ctx.now, id)
  moved(ctx, ctx.prefix .. id, id, ttype, "", "aggregating", nil, nil,
    {"type", ttype, "msg", ARGV[a + 2], "payload", ARGV[a + 3], "group", ARGV[5]})
end
redis.call("SADD", KEYS[4], ARGV[5])
finish(ctx)
if new_queue then return "NEW" end
return "OK"
