-- dequeue: pending -> active for up to k tasks, each under a fresh lease. Nothing from a paused queue; with a
-- concurrency cap nothing beyond cap active tasks in the queue, whichever workers hold them (the lease set is the
-- queue's active set across all workers, so its size is the count to cap); with a rate limit nothing beyond
-- limit starts in any period (a sliding-window log: the starts set holds one member per start, scored by the
-- caller's now, and is shared by every worker and consumer of the queue).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] lease set    KEYS[5] paused flag
-- KEYS[6] starts set (<task id>@<lease token> -> start ms)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5] lease expiry (ms)  ARGV[6] lease token prefix, unique to this call    ARGV[7] k, most tasks to take
-- ARGV[8] concurrency cap of the queue, 0 for none    ARGV[9] rate limit, most starts per period, 0 for none
-- ARGV[10] rate period (ms)
-- Returns the time (ms) from which the rate limit admits another start, 0 when it holds nothing back, then 7
-- values per task: id, type, options, payload, retried, lease token, pending since (ms; for the wait time). No tasks when the queue is paused, has
-- nothing pending, or is at its cap or rate limit (tasks over a limit wait in pending); such a call writes
-- nothing.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
if redis.call("EXISTS", KEYS[5]) == 1 then return {0} end
local k = tonumber(ARGV[7])
local cap = tonumber(ARGV[8]) or 0
if cap > 0 then
  k = math.min(k, cap - redis.call("ZCARD", KEYS[4]))
  if k <= 0 then return {0} end
end
local limit = tonumber(ARGV[9]) or 0
local period = tonumber(ARGV[10]) or 0
local window_start = ctx.now - period -- a start counts while its time is after this
-- When the window holds n >= limit starts, another is admitted once all but limit - 1 of them have left it: at
-- the time of its (n - limit + 1)-th oldest start plus the period. Starts stamped after now (by a caller whose
-- clock runs ahead) count too, so no window over the recorded times ever holds more than limit starts.
local function admitted_from(in_window)
  if in_window < limit then return 0 end
  local oldest = redis.call("ZRANGEBYSCORE", KEYS[6], "(" .. window_start, "+inf", "WITHSCORES", "LIMIT",
    in_window - limit, 1)
  return tonumber(oldest[2]) + period
end
local in_window = 0
if limit > 0 then
  in_window = redis.call("ZCOUNT", KEYS[6], "(" .. window_start, "+inf")
  k = math.min(k, limit - in_window)
  if k <= 0 then return {admitted_from(in_window)} end
end
local ids = redis.call("RPOP", KEYS[3], k)
if not ids then return {0} end
local out, leases, starts = {0}, {}, {}
for i, id in ipairs(ids) do
  local key = ctx.prefix .. id
  local f = redis.call("HMGET", key, "type", "msg", "payload", "retried", "since")
  -- An id without a hash (never expected) is dropped rather than handed out as a task that cannot run.
  if f[1] then
    local token = ARGV[6] .. i
    leases[#leases + 1] = ARGV[5]
    leases[#leases + 1] = id
    starts[#starts + 1] = ctx.now
    starts[#starts + 1] = id .. "@" .. token
    ctx.lease = token  -- into the event too (see emit)
    moved(ctx, key, id, f[1], "pending", "active", nil, nil, {"lease", token})
    ctx.lease = nil
    out[#out + 1] = id
    out[#out + 1] = f[1]
    out[#out + 1] = f[2] or ""
    out[#out + 1] = f[3] or ""
    out[#out + 1] = f[4] or "0"
    out[#out + 1] = token
    out[#out + 1] = f[5] or "0"
  end
end
if #leases > 0 then redis.call("ZADD", KEYS[4], unpack(leases)) end
if limit > 0 and #starts > 0 then
  -- Starts that left the window never count again; the key expires after a quiet minute past the period (only
  -- housekeeping: the window is always judged by the recorded times, never by the key's age).
  redis.call("ZREMRANGEBYSCORE", KEYS[6], "-inf", window_start)
  redis.call("ZADD", KEYS[6], unpack(starts))
  redis.call("PEXPIRE", KEYS[6], period + 60000)
  out[1] = admitted_from(in_window + #starts / 2)
end
finish(ctx)
return out
