-- reads memory: an asynq queue's approximate memory, by asynq's own rule (a read: it writes nothing). For each
-- state's list or sorted set: its own MEMORY USAGE, plus the mean MEMORY USAGE of its first ARGV[2] task hashes
-- times its length; for aggregating tasks, the mean over the first ARGV[2] tasks of each of the first ARGV[3]
-- groups, times the tasks of every group. Summed in asynq's order, so the figure is the one asynq reports.
-- KEYS[1] active    KEYS[2] pending    KEYS[3] scheduled    KEYS[4] retry    KEYS[5] archived    KEYS[6] completed
-- KEYS[7] set of group names
-- ARGV[1] task key prefix    ARGV[2] tasks sampled per state    ARGV[3] groups sampled    ARGV[4] group key prefix
-- Returns the bytes (an integer: Redis truncates the sum). Error when ARGV[2] is not positive.
local sample = tonumber(ARGV[2])
if sample == nil or sample <= 0 then return redis.error_reply("ERR sample size must be positive") end
local function usage(key)
  return redis.call("MEMORY", "USAGE", key) or 0
end
local total = 0
for i = 1, 6 do
  local list = i <= 2
  local ids = list and redis.call("LRANGE", KEYS[i], 0, sample - 1) or redis.call("ZRANGE", KEYS[i], 0, sample - 1)
  if #ids > 0 then
    local sampled = 0
    for _, id in ipairs(ids) do
      sampled = sampled + usage(ARGV[1] .. id)
    end
    local size = list and redis.call("LLEN", KEYS[i]) or redis.call("ZCARD", KEYS[i])
    total = total + sampled / #ids * size
  end
  total = total + usage(KEYS[i])
end
local names = redis.call("SMEMBERS", KEYS[7])
if #names > 0 then
  local tasks, sampled, read = 0, 0, 0
  for n, name in ipairs(names) do
    tasks = tasks + redis.call("ZCARD", ARGV[4] .. name)
    if n <= tonumber(ARGV[3]) then
      for _, id in ipairs(redis.call("ZRANGE", ARGV[4] .. name, 0, sample - 1)) do
        sampled = sampled + usage(ARGV[1] .. id)
        read = read + 1
      end
    end
  end
  if read > 0 then
    total = total + sampled / read * tasks
  end
end
return total
