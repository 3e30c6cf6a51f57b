-- workflow archive: an operator gives up on the steps of a running workflow that have not started (pending,
-- scheduled, or retry: the step that would otherwise retry for days). Each is archived with the error "archived by
-- <operator>" as if its retries were spent, so the workflow fails as on any failure: the first of them is its
-- failed member, members still waiting are cancelled and the on_error callback is released with the failure
-- (after_failure). Members running now finish on their own.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] workflow hash    KEYS[4] pending    KEYS[5] scheduled
-- KEYS[6] retry    KEYS[7] archived
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] workflow id
-- Returns the number of members archived; errors NOT_FOUND (no such workflow, or its record expired),
-- PRECONDITION (the workflow is not running, or none of its members is pending, scheduled or retry).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local wkey = KEYS[3]
local f = redis.call("HMGET", wkey, "state", "on_error")
if not f[1] then return redis.error_reply("NOT_FOUND workflow " .. ARGV[5]) end
if f[1] ~= "running" then return redis.error_reply("PRECONDITION workflow is " .. f[1] .. ", not running") end
local structures = {pending = KEYS[4], scheduled = KEYS[5], retry = KEYS[6]}
local todo = {}
for _, m in ipairs(workflow_members(wkey)) do
  local state = redis.call("HGET", ctx.prefix .. m[1], "state")
  if structures[state] and m[1] ~= (f[2] or "") then todo[#todo + 1] = {m[1], state} end
end
if #todo == 0 then
  return redis.error_reply("PRECONDITION no member of the workflow is pending, scheduled or retrying")
end
local why = "archived by " .. ctx.actor
for _, t in ipairs(todo) do
  archive_unstarted(ctx, ctx.prefix .. t[1], t[1], t[2], structures, KEYS[7], why, "failed")
end
finish(ctx)
return #todo
