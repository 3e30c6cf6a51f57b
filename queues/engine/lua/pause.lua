-- pause: the queue stops handing out tasks (dequeue returns nothing); everything else carries on.
-- KEYS[1] paused flag    KEYS[2] event stream
-- ARGV[1] now (ms)    ARGV[2] event stream max length    ARGV[3] actor
-- Returns "OK"; error PRECONDITION when the queue is already paused.
if redis.call("SET", KEYS[1], ARGV[1], "NX") == false then return redis.error_reply("PRECONDITION already paused") end
emit(new_context("", KEYS[2], "", ARGV[1], ARGV[2], ARGV[3]), "", "", "running", "paused")
return "OK"
