-- edit task: retry or archived -> pending, with the payload and options an operator gave it (edit and retry).
-- Its retry count starts again from 0: it runs with new input. Its id and history stay; its type too, unless a new
-- one is given (a task whose type no worker handles, say, misspelt). With a record time, the task is marked to leave
-- a record when it is deleted (mark_kept in _lib.lua): the audit log names it now.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] retry    KEYS[5] archived
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor    ARGV[5] id
-- ARGV[6] payload    ARGV[7] options (msg)    ARGV[8] new task type, or "" (or absent) to keep it
-- ARGV[9] how long its record outlives the task (ms); "0" (or absent): no record
-- ARGV[10] the trace id of the operator's context that the options carry (operator_trace.py), or "" (or absent):
-- the event carries it
-- Returns "OK"; errors NOT_FOUND, PRECONDITION (any other state).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local id = ARGV[5]
local key, state, ttype, from = locate(ctx, id, {retry = KEYS[4], archived = KEYS[5]},
  "only a retry or archived task can be edited")
if not key then return state end
if ARGV[10] and ARGV[10] ~= "" then ctx.trace = ARGV[10] end
redis.call("ZREM", from, id)
mark_kept(ctx, key, "edit", ARGV[9])  -- before the HSET: the trail keeps the failure the edit answers
redis.call("HSET", key, "payload", ARGV[6], "msg", ARGV[7], "retried", 0)
if ARGV[8] and ARGV[8] ~= "" and ARGV[8] ~= ttype then
  -- The per-type counts follow the task: it leaves its state under the old type and arrives under the new one.
  tally(ctx, state .. ":" .. ttype, -1)
  tally(ctx, state .. ":" .. ARGV[8], 1)
  redis.call("HSET", key, "type", ARGV[8])
  ttype = ARGV[8]
end
to_pending(ctx, KEYS[3], key, id, ttype, state)
finish(ctx)
return "OK"
