-- dequeue: pending -> active for up to k tasks, each under a fresh lease. Nothing from a paused queue, and with
-- a concurrency cap nothing beyond cap active tasks in the queue, whichever workers hold them: the lease set is
-- the queue's active set across all workers, so its size is the count to cap.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] lease set    KEYS[5] paused flag
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] worker id
-- ARGV[5] lease expiry (ms)  ARGV[6] lease token prefix, unique to this call    ARGV[7] k, most tasks to take
-- ARGV[8] concurrency cap of the queue, 0 for none
-- Returns a flat array of 6 values per task: id, type, options, payload, retried, lease token. Empty when the
-- queue is paused, has nothing pending, or is at its cap (tasks over the cap wait in pending).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
if redis.call("EXISTS", KEYS[5]) == 1 then return {} end
local k = tonumber(ARGV[7])
local cap = tonumber(ARGV[8]) or 0
if cap > 0 then
  k = math.min(k, cap - redis.call("ZCARD", KEYS[4]))
  if k <= 0 then return {} end
end
local ids = redis.call("RPOP", KEYS[3], k)
if not ids then return {} end
local out, leases = {}, {}
for i, id in ipairs(ids) do
  local key = ctx.prefix .. id
  local f = redis.call("HMGET", key, "type", "msg", "payload", "retried")
  -- An id without a hash (never expected) is dropped rather than handed out as a task that cannot run.
  if f[1] then
    local token = ARGV[6] .. i
    leases[#leases + 1] = ARGV[5]
    leases[#leases + 1] = id
    moved(ctx, key, id, f[1], "pending", "active", nil, nil, {"lease", token})
    out[#out + 1] = id
    out[#out + 1] = f[1]
    out[#out + 1] = f[2] or ""
    out[#out + 1] = f[3] or ""
    out[#out + 1] = f[4] or "0"
    out[#out + 1] = token
  end
end
if #leases > 0 then redis.call("ZADD", KEYS[4], unpack(leases)) end
finish(ctx)
return out
