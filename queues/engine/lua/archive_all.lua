-- archive all: every task of one state (pending, scheduled or retry) -> archived, one chunk per call.
-- Unique locks are released; the archive is trimmed to its limits after each chunk. Tasks waiting for them are
-- archived too, and their workflows fail, as with archive_task (after_failure in _lib.lua).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] the state's structure    KEYS[4] archived
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] state    ARGV[6] chunk size    ARGV[7] archive max size    ARGV[8] archive max age (ms)
-- Returns how many tasks moved; the caller calls again until it gets 0.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local ids = take(KEYS[3], ARGV[5], tonumber(ARGV[6]))
for _, id in ipairs(ids) do
  local key = ctx.prefix .. id
  release_unique(key, id)
  redis.call("ZADD", KEYS[4], ctx.now, id)
  moved(ctx, key, id, redis.call("HGET", key, "type") or "", ARGV[5], "archived", "archived by " .. ctx.actor)
  after_failure(ctx, key, id, "archived by " .. ctx.actor, "failed")
end
trim_archive(ctx, KEYS[4], ARGV[7], ARGV[8])
finish(ctx)
return #ids
