-- dequeue: pending -> active for up to k tasks, each under a fresh lease, within the queue's pause, concurrency
-- cap and rate limit (lease_next in _lib.lua, which the ack scripts share when they fetch on ack).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] lease set    KEYS[5] paused flag
-- KEYS[6] starts set (<task id>@<lease token> -> start ms)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5] lease expiry (ms)  ARGV[6] lease token prefix, unique to this call    ARGV[7] k, most tasks to take
-- ARGV[8] concurrency cap of the queue, 0 for none    ARGV[9] rate limit, most starts per period, 0 for none
-- ARGV[10] rate period (ms)
-- Returns the time (ms) from which the rate limit admits another start, 0 when it holds nothing back, then 7
-- values per task: id, type, options, payload, retried, lease token, pending since (ms; for the wait time). No
-- tasks when the queue is paused, has nothing pending, or is at its cap or rate limit (tasks over a limit wait
-- in pending); such a call writes nothing.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local out = lease_next(ctx, KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[5], ARGV[6], tonumber(ARGV[7]),
  tonumber(ARGV[8]) or 0, tonumber(ARGV[9]) or 0, tonumber(ARGV[10]) or 0)
finish(ctx)
return out
