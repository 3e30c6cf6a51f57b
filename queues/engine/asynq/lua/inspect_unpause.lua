-- unpause a queue (asynq's Inspector.UnpauseQueue): Go servers take its tasks again once the paused key is gone.
-- KEYS[1] asynq:{<queue>}:paused
-- Returns 1 when unpaused by this call, 0 when it was not paused (nothing changed).
return redis.call("DEL", KEYS[1])
