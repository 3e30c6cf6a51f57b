-- run every task of a sorted set, a chunk a call (asynq's Inspector.RunAll*Tasks): the first ARGV[2] tasks of the
-- scheduled, retry or archived set, or of an aggregating group, become pending in the set's order. Called until
-- it returns 0, it leaves what asynq's one call leaves (a group emptied this way also leaves the group set).
-- KEYS[1] the sorted set    KEYS[2] pending    KEYS[3] groups (SET)
-- ARGV[1] task key prefix    ARGV[2] chunk size    ARGV[3] the group's name ("" for a state's set)
-- Returns how many tasks this call made pending.
local ids = redis.call("ZRANGE", KEYS[1], 0, tonumber(ARGV[2]) - 1)
for _, id in ipairs(ids) do
  redis.call("LPUSH", KEYS[2], id)
  redis.call("HSET", ARGV[1] .. id, "state", "pending")
end
if #ids > 0 then redis.call("ZREM", KEYS[1], unpack(ids)) end
if ARGV[3] ~= "" and redis.call("ZCARD", KEYS[1]) == 0 then redis.call("SREM", KEYS[3], ARGV[3]) end
return #ids
