-- reads queue stats: one asynq queue's sizes and counters at one instant, as asynq's Inspector counts them (a
-- read: it writes nothing). Aggregating tasks are the sum of the queue's group sets.
-- KEYS[1] pending (list)    KEYS[2] active (list)    KEYS[3] scheduled    KEYS[4] retry    KEYS[5] archived
-- KEYS[6] completed    KEYS[7] processed today    KEYS[8] failed today    KEYS[9] processed total
-- KEYS[10] failed total    KEYS[11] paused    KEYS[12] set of group names
-- ARGV[1] task key prefix (asynq:{q}:t:)    ARGV[2] group key prefix (asynq:{q}:g:)
-- Returns {pending, active, scheduled, retry, archived, completed, processed today, failed today, processed
-- total, failed total, paused (0/1), pending_since of the oldest pending task (ns, 0: none), aggregating, groups}.
local out = {redis.call("LLEN", KEYS[1]), redis.call("LLEN", KEYS[2])}
for i = 3, 6 do
  out[#out + 1] = redis.call("ZCARD", KEYS[i])
end
for i = 7, 10 do
  out[#out + 1] = tonumber(redis.call("GET", KEYS[i]) or "0") or 0
end
out[#out + 1] = redis.call("EXISTS", KEYS[11])
local since = 0
local head = redis.call("LINDEX", KEYS[1], -1)
if head then
  since = tonumber(redis.call("HGET", ARGV[1] .. head, "pending_since") or "0") or 0
end
-- As a string: a Lua number reply would lose the nanoseconds past 2^53.
out[#out + 1] = string.format("%.0f", since)
local aggregating = 0
local names = redis.call("SMEMBERS", KEYS[12])
for _, name in ipairs(names) do
  aggregating = aggregating + redis.call("ZCARD", ARGV[2] .. name)
end
out[#out + 1] = aggregating
out[#out + 1] = #names
return out
