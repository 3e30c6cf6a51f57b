-- pause a queue (asynq's Inspector.PauseQueue): its paused key holds the time it was paused, and Go servers skip
-- the queue while the key exists. A queue paused already keeps its time.
-- KEYS[1] asynq:{<queue>}:paused
-- ARGV[1] now (Unix seconds)
-- Returns 1 when paused by this call, 0 when it was paused already (nothing changed).
if redis.call("SET", KEYS[1], ARGV[1], "NX") then
  return 1
end
return 0
