-- delete task: any state but active -> gone (an operator action). An active task must be cancelled first.
-- A task deleted before it succeeded fails the tasks waiting for it and its workflow (after_failure in _lib.lua),
-- as an archived one does. A waiting task first leaves the dependency sets it is registered in.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] scheduled    KEYS[5] retry
-- KEYS[6] archived    KEYS[7] completed    KEYS[8] waiting
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor    ARGV[5] id
-- Returns "OK"; errors NOT_FOUND, PRECONDITION (active).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local id = ARGV[5]
local key, state, ttype, from = locate(ctx, id,
  {pending = KEYS[3], scheduled = KEYS[4], retry = KEYS[5], archived = KEYS[6], completed = KEYS[7],
   waiting = KEYS[8]},
  "cancel it before deleting")
if not key then return state end
remove_from(from, state, id)
if state == "waiting" then leave_dependencies(ctx, key, id) end
if state ~= "completed" then after_failure(ctx, key, id, "deleted by " .. ctx.actor, "failed") end
drop(ctx, key, id, ttype, state, "deleted by " .. ctx.actor)
finish(ctx)
return "OK"
