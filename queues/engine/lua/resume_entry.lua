-- resume_entry: a paused periodic entry enqueues again, from its next tick on (the ticks of its pause were marked
-- handled as they passed, so none is caught up).
-- KEYS[1] paused entries (hash: entry id -> JSON of when and by whom)
-- ARGV[1] entry id
-- Returns "OK"; error PRECONDITION when the entry is not paused.
if redis.call("HDEL", KEYS[1], ARGV[1]) == 0 then
  return redis.error_reply("PRECONDITION entry " .. ARGV[1] .. " is not paused")
end
return "OK"
