-- pause_entry: a periodic entry stops enqueuing. The flag sits in the entry's queue's slot, where fire_tick checks
-- it in the same step as it would enqueue, so no scheduler fires a tick of the entry once this returned, however
-- many run; an operator's run now still works.
-- KEYS[1] paused entries (hash: entry id -> JSON of when and by whom)
-- ARGV[1] entry id    ARGV[2] the pause record (JSON)
-- Returns "OK"; error PRECONDITION when the entry is paused already (the first pause's record is kept).
if redis.call("HSETNX", KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return redis.error_reply("PRECONDITION entry " .. ARGV[1] .. " is paused already")
end
return "OK"
