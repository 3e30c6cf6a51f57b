-- archive every task of a state, a chunk a call (asynq's Inspector.ArchiveAll*Tasks): the first ARGV[2] tasks of
-- the pending list, of the scheduled or retry set, or of an aggregating group go to the archive, scored by now,
-- and the archive is trimmed as asynq trims it. Called until it returns 0 with one "now", it leaves what asynq's
-- one call leaves (a group emptied this way also leaves the group set).
-- KEYS[1] the list or sorted set    KEYS[2] archived    KEYS[3] groups (SET)
-- ARGV[1] task key prefix    ARGV[2] chunk size    ARGV[3] "list" or "zset"    ARGV[4] now (Unix seconds)
-- ARGV[5] cutoff (Unix seconds)    ARGV[6] archive size limit    ARGV[7] the group's name ("" for a state)
-- Returns how many tasks this call archived.
local size = tonumber(ARGV[2])
local ids
if ARGV[3] == "list" then
  ids = redis.call("LRANGE", KEYS[1], 0, size - 1)
  redis.call("LTRIM", KEYS[1], #ids, -1)
else
  ids = redis.call("ZRANGE", KEYS[1], 0, size - 1)
  if #ids > 0 then redis.call("ZREM", KEYS[1], unpack(ids)) end
end
for _, id in ipairs(ids) do
  redis.call("ZADD", KEYS[2], ARGV[4], id)
  redis.call("HSET", ARGV[1] .. id, "state", "archived")
end
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", ARGV[5])
redis.call("ZREMRANGEBYRANK", KEYS[2], 0, -tonumber(ARGV[6]))
if ARGV[7] ~= "" and redis.call("ZCARD", KEYS[1]) == 0 then redis.call("SREM", KEYS[3], ARGV[7]) end
return #ids
