-- run task now: scheduled, retry, archived or waiting -> pending (an operator action). A waiting task runs without
-- its dependencies: it leaves their dependency sets and gets, when it asked for results, those of the ones that
-- succeeded already (null for the others). Its own dependents keep waiting for it to succeed. An on_error
-- callback is refused: it exists to run when its workflow fails (delete it instead). With the operator's trace
-- context (operator_mark in _lib.lua), the task's options take it, and the event carries its trace id.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] scheduled    KEYS[5] retry
-- KEYS[6] archived    KEYS[7] waiting
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor    ARGV[5] id
-- ARGV[6] how long its record outlives the task (ms; see mark_kept)
-- ARGV[7] the task's options as read, or "" (or absent) for no operator context    ARGV[8] its options with the
-- operator's context    ARGV[9] the operator's trace id
-- Returns "OK"; errors NOT_FOUND, PRECONDITION (pending, active, completed, an on_error callback, or options changed
-- since they were read).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local id = ARGV[5]
local key, state, ttype, from = locate(ctx, id,
  {scheduled = KEYS[4], retry = KEYS[5], archived = KEYS[6], waiting = KEYS[7]}, "it cannot be run now")
if not key then return state end
if state == "waiting" then
  local f = redis.call("HMGET", key, "role", "wf")
  if f[1] == "on_error" then
    return redis.error_reply("PRECONDITION task is the on_error callback of workflow " .. (f[2] or "?") ..
      ", it runs only if the workflow fails; delete it instead")
  end
end
local refused = operator_mark(ctx, key, ARGV[7], ARGV[8], ARGV[9])
if refused then return refused end
mark_kept(ctx, key, "run", ARGV[6])
if state == "waiting" then
  leave_dependencies(ctx, key, id)
  release_waiting(ctx, key, id, ttype)
else
  redis.call("ZREM", from, id)
  to_pending(ctx, KEYS[3], key, id, ttype, state)
end
finish(ctx)
return "OK"
