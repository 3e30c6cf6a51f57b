-- remove a queue's task lists and the tasks in them (asynq's Inspector.DeleteQueue). asynq's rules: without force,
-- any pending, active, scheduled, retry or archived task refuses; with force, only an active one does. Completed
-- tasks, groups, the paused key and the daily counters are left as asynq leaves them. The caller then takes the
-- queue out of asynq:queues (another slot on a Cluster).
-- KEYS[1] pending (LIST)    KEYS[2] active (LIST)    KEYS[3] scheduled    KEYS[4] retry    KEYS[5] archived
-- KEYS[6] lease
-- ARGV[1] task key prefix    ARGV[2] "1" to force
-- Returns 1 when removed; -1 when tasks are left (not forced); -2 when tasks are active (forced).
local lists, sets = {KEYS[1], KEYS[2]}, {KEYS[3], KEYS[4], KEYS[5]}
if redis.call("LLEN", KEYS[2]) > 0 then
  return ARGV[2] == "1" and -2 or -1
end
if ARGV[2] ~= "1" then
  local left = redis.call("LLEN", KEYS[1])
  for _, set in ipairs(sets) do left = left + redis.call("ZCARD", set) end
  if left > 0 then return -1 end
end
for _, list in ipairs(lists) do
  for _, id in ipairs(redis.call("LRANGE", list, 0, -1)) do redis.call("DEL", ARGV[1] .. id) end
end
for _, set in ipairs(sets) do
  for _, id in ipairs(redis.call("ZRANGE", set, 0, -1)) do redis.call("DEL", ARGV[1] .. id) end
end
redis.call("DEL", KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
return 1
