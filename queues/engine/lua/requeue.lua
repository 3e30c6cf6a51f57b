-- requeue: active -> pending at the head of the line, for tasks a stopping worker did not finish. No retry
-- is counted: the attempt was interrupted, not failed. Fenced per task.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] lease set    KEYS[4] pending
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5..] pairs: id, lease token
-- Returns one status per task: "OK", "NOT_FOUND" or "LEASE_LOST".
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local out = each_fenced(ctx, KEYS[3], 5, 2, function(_, id, key, ttype)
  leave_active(KEYS[3], key, id)
  notify_if_first(KEYS[4], redis.call("RPUSH", KEYS[4], id))
  moved(ctx, key, id, ttype, "active", "pending", "worker shut down")
end)
finish(ctx)
return out
