-- mark complete: active -> completed, for successful attempts of tasks with retention; the task is kept until
-- now + retention (the janitor deletes it then). Releases unique locks, counts processed, releases the tasks
-- waiting for them (after_success in _lib.lua). Fenced per task. The hash keeps how long the attempt ran (ran_ms).
-- Asked to, it then leases the next tasks of the queue, as done.lua does (fetch-on-ack).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] lease set    KEYS[4] completed
-- KEYS[5] processed total    KEYS[6] processed today    KEYS[7] pending    KEYS[8] paused flag
-- KEYS[9] starts set (KEYS[7..9] read only when it leases)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5] ttl of daily counters (s)    ARGV[6] start times, as in done.lua    ARGV[7..13] what to lease after, as
-- in done.lua    ARGV[14..] triples: id, lease token, retention (ms)
-- Returns what done.lua returns.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local started = start_times(ARGV[6])
-- The batch leaves the lease set in one ZREM (ack_batch) and enters the completed set in one ZADD. An attempt named
-- twice is refused the second time as a completed task is (LEASE_LOST).
local completed = {}
local out = ack_batch(ctx, KEYS[3], 14, 3, "LEASE_LOST", function(a, id, key, ttype, ukey, wf, role)
  redis.call("HDEL", key, "lease")
  release_lock(ukey, id)
  ctx.started = started[(a - 14) / 3 + 1] or nil
  moved(ctx, key, id, ttype, "active", "completed", nil, nil, {"completed_at", ctx.now, "ran_ms", ran_ms(ctx)})
  ctx.started = nil
  count(ctx, KEYS[5], KEYS[6], ARGV[5], "processed", ttype)
  after_success(ctx, key, id, wf, role)
  completed[#completed + 1] = ctx.now + tonumber(ARGV[a + 2])
  completed[#completed + 1] = id
end)
call_chunked("ZADD", KEYS[4], completed)
out = lease_after_ack(ctx, out, KEYS[3], 7, 7)
finish(ctx)
return out
