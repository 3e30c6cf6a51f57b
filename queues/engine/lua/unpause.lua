-- unpause: the queue hands out tasks again.
-- KEYS[1] paused flag    KEYS[2] event stream    KEYS[3] pending (idle workers are woken on its channel)
-- ARGV[1] now (ms)    ARGV[2] event stream max length    ARGV[3] actor
-- Returns "OK"; error PRECONDITION when the queue is not paused.
if redis.call("DEL", KEYS[1]) == 0 then return redis.error_reply("PRECONDITION not paused") end
emit(new_context("", KEYS[2], "", ARGV[1], ARGV[2], ARGV[3]), "", "", "paused", "running")
if redis.call("LLEN", KEYS[3]) > 0 then redis.call("PUBLISH", KEYS[3], "") end
return "OK"
