-- workflow cancel: an operator stops a workflow. Every member that has not started (waiting, pending, scheduled,
-- retry) is archived with the error "cancelled by <operator>" and recorded as cancelled; members running now
-- finish on their own (their outcomes are recorded, as after a failure). An on_error callback still waiting is
-- dropped (recorded as skipped: nothing failed); one a failure has released already is left to run. A running
-- workflow ends "cancelled"; a failed one stays failed (it failed first) with the rest of it cancelled. Tasks
-- outside the workflow waiting for a cancelled member are archived as when it fails.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] workflow hash    KEYS[4] pending    KEYS[5] scheduled
-- KEYS[6] retry    KEYS[7] archived    KEYS[8] waiting
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] workflow id
-- Returns the number of members cancelled; errors NOT_FOUND (no such workflow, or its record expired),
-- PRECONDITION (it succeeded or was cancelled already, or it failed and nothing of it is left to run).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local wkey = KEYS[3]
local f = redis.call("HMGET", wkey, "state", "on_error")
if not f[1] then return redis.error_reply("NOT_FOUND workflow " .. ARGV[5]) end
local structures = {pending = KEYS[4], scheduled = KEYS[5], retry = KEYS[6], waiting = KEYS[8]}
local on_error = f[2] or ""
-- Dependents first: each is cancelled in its own name, not as the cascade of a dependency cancelled before it.
local todo = {}
local members = workflow_members(wkey)
for i = #members, 1, -1 do
  local mid = members[i][1]
  local state = redis.call("HGET", ctx.prefix .. mid, "state")
  if structures[state] and (mid ~= on_error or state == "waiting") then todo[#todo + 1] = {mid, state} end
end
if f[1] ~= "running" and not (f[1] == "failed" and #todo > 0) then
  local why = f[1] == "failed" and "nothing of it is left to run" or "there is nothing to cancel"
  return redis.error_reply("PRECONDITION workflow is " .. f[1] .. ", " .. why)
end
local why = "cancelled by " .. ctx.actor
if f[1] == "running" then
  -- Ended first, so the members archived below are recorded without failing it (after_failure fails only a
  -- running workflow).
  redis.call("HSET", wkey, "error", why)
  workflow_ended(ctx, wkey, "cancelled")
end
for _, t in ipairs(todo) do
  local mid, state = t[1], t[2]
  local mkey = ctx.prefix .. mid
  if mid == on_error then
    drop_waiting(ctx, mkey, mid, "workflow " .. why)
    redis.call("HSET", wkey, "s:" .. mid, "skipped")
  elseif redis.call("HGET", mkey, "state") == state then  -- as read above, unless a cascade took it since
    archive_unstarted(ctx, mkey, mid, state, structures, KEYS[7], why, "cancelled")
  end
end
finish(ctx)
return #todo
