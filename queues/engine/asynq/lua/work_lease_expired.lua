-- Lease expired: the messages of active tasks whose lease ran out by the cutoff (asynq's ListLeaseExpired), for the
-- recoverer to retry or archive. Reads only.
-- KEYS[1] lease
-- ARGV[1] the cutoff (unix seconds)   ARGV[2] the task-key prefix
-- Returns the messages (a lease whose task hash is gone gives none).
local out = {}
for _, id in ipairs(redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1])) do
  local msg = redis.call("HGET", ARGV[2] .. id, "msg")
  if msg then
    out[#out + 1] = msg
  end
end
return out
