-- write result: an active attempt stores its result, its progress or its journal (a JSON document a handler keeps
-- across its attempts, see Task.write_journal) on the task. Fenced by the lease token, so a zombie attempt cannot
-- overwrite what the live attempt wrote. No state changes.
-- KEYS[1] lease set
-- ARGV[1] task key prefix    ARGV[2] id    ARGV[3] lease token    ARGV[4] field: "result", "progress" or "journal"
-- ARGV[5] value
-- Returns "OK"; errors NOT_FOUND, LEASE_LOST, PRECONDITION (unknown field).
if ARGV[4] ~= "result" and ARGV[4] ~= "progress" and ARGV[4] ~= "journal" then
  return redis.error_reply("PRECONDITION bad field")
end
local key = ARGV[1] .. ARGV[2]
local refused = fence(KEYS[1], key, ARGV[2], ARGV[3])
if refused then return redis.error_reply(refused .. " " .. ARGV[2]) end
redis.call("HSET", key, ARGV[4], ARGV[5])
return "OK"
