-- replace a scheduled task's message (asynq's Inspector.UpdateTaskPayload: the caller re-encodes the message it
-- read with the new payload). Only a scheduled task is edited, and only if its message is still the one read.
-- KEYS[1] asynq:{<queue>}:t:<id>
-- ARGV[1] the new message    ARGV[2] the message it was made from
-- Returns 1 when updated; 0 when there is no such task; -1 when it is not scheduled; -2 when its message changed
-- since it was read (nothing changed: read it again).
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
local state, msg = unpack(redis.call("HMGET", KEYS[1], "state", "msg"))
if state ~= "scheduled" then return -1 end
if msg ~= ARGV[2] then return -2 end
redis.call("HSET", KEYS[1], "msg", ARGV[1])
return 1
