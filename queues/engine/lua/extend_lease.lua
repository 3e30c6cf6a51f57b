-- extend lease: the heartbeat pushes the lease expiry of running tasks forward. No state changes.
-- KEYS[1] lease set
-- ARGV[1] task key prefix    ARGV[2] new expiry (ms)    ARGV[3..] pairs: id, lease token
-- Returns the ids whose lease this token no longer holds: those attempts must stop, their results are void.
local lost = {}
for a = 3, #ARGV, 2 do
  local id, token = ARGV[a], ARGV[a + 1]
  if redis.call("HGET", ARGV[1] .. id, "lease") == token and redis.call("ZSCORE", KEYS[1], id) then
    redis.call("ZADD", KEYS[1], "XX", ARGV[2], id)
  else
    lost[#lost + 1] = id
  end
end
return lost
