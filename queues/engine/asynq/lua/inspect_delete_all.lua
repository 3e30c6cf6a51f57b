-- delete every task of a state, a chunk a call (asynq's Inspector.DeleteAll*Tasks): the first ARGV[2] tasks of the
-- pending list, of the scheduled, retry, archived or completed set, or of an aggregating group are deleted. Where
-- asynq releases unique locks (the sorted sets of a state, ARGV[4] "1") a lock still held by its task is released.
-- Called until it returns 0, it leaves what asynq's one call leaves (an emptied group also leaves the group set).
-- KEYS[1] the list or sorted set    KEYS[2] groups (SET)
-- ARGV[1] task key prefix    ARGV[2] chunk size    ARGV[3] "list" or "zset"    ARGV[4] "1" to release unique locks
-- ARGV[5] the group's name ("" for a state)
-- Returns how many tasks this call deleted.
-- The order tasks go in does not matter here: every one goes.
local ids = {}
if ARGV[3] == "list" then
  ids = redis.call("LPOP", KEYS[1], ARGV[2]) or {}
else
  local popped = redis.call("ZPOPMIN", KEYS[1], ARGV[2])
  for i = 1, #popped, 2 do ids[#ids + 1] = popped[i] end
end
for _, id in ipairs(ids) do
  local key = ARGV[1] .. id
  if ARGV[4] == "1" then
    local unique = redis.call("HGET", key, "unique_key")
    if unique and unique ~= "" and redis.call("GET", unique) == id then redis.call("DEL", unique) end
  end
  redis.call("DEL", key)
end
if ARGV[5] ~= "" and redis.call("ZCARD", KEYS[1]) == 0 then redis.call("SREM", KEYS[2], ARGV[5]) end
return #ids
