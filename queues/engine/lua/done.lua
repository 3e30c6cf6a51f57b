-- done: active -> gone, for successful attempts of tasks without retention. Releases their unique locks and
-- counts them as processed, and releases the tasks waiting for them (after_success in _lib.lua). Each task is
-- fenced by its lease token; a refused task changes nothing. Asked to, it then leases up to k more tasks of the
-- queue: at most one per task acknowledged, and a few more for the worker's prefetch (fetch-on-ack: lease_after_ack
-- in _lib.lua). A task an operator acted on (marked by mark_kept in _lib.lua) leaves a record first (leave_record).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] lease set    KEYS[4] processed total
-- KEYS[5] processed today    KEYS[6] pending    KEYS[7] paused flag    KEYS[8] starts set (KEYS[6..8]: as
-- dequeue.lua's, read only when it leases)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5] ttl of daily counters (s)    ARGV[6] when each attempt's handler started (ms, comma-separated, "0" for
-- unknown; "" for none: into the events, for the timeline)    ARGV[7] k, most tasks to lease after for the slots
-- the acks free    ARGV[8] most tasks to lease beyond those (the worker's prefetch); both 0: lease nothing
-- ARGV[9..13] lease expiry (ms), lease token prefix, cap, rate limit, rate period (ms), as dequeue.lua's ARGV[5..10]
-- ARGV[14..] pairs: id, lease token
-- Returns one status per task: "OK", "NOT_FOUND" or "LEASE_LOST"; when it may lease, {those statuses,
-- dequeue.lua's reply for the tasks leased}.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local started = start_times(ARGV[6])
-- The batch leaves the lease set in one ZREM (ack_batch) and is deleted in one DEL, not a call per task. Until the
-- DEL the hashes still read active, so ack_batch refuses an attempt named twice as a deleted task is (NOT_FOUND).
local keys = {}
local out = ack_batch(ctx, KEYS[3], 14, 2, "NOT_FOUND", function(a, id, key, ttype, ukey, wf, role, keep)
  release_lock(ukey, id)
  ctx.started = started[(a - 14) / 2 + 1] or nil
  if keep then leave_record(ctx, key, id, ttype, keep, "done") end
  moved(ctx, key, id, ttype, "active", "", nil, "done")
  ctx.started = nil
  count(ctx, KEYS[4], KEYS[5], ARGV[5], "processed", ttype)
  after_success(ctx, key, id, wf, role)  -- reads the task's result and workflow, so before the DEL
  keys[#keys + 1] = key
end)
call_chunked("DEL", nil, keys)
out = lease_after_ack(ctx, out, KEYS[3], 6, 7)
finish(ctx)
return out
