-- cancel task, recording the operator's trace context (an operator action): an active task's options take the
-- operator's context (operator_mark in _lib.lua) and the cancel request goes to the workers, in one call. The task
-- stays active: the worker running it stops it and sends it to retry, and that retry's attempt is the operator's
-- child. Used only with a context to record (a cancel without one is the publish alone); no transition, no event.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] lease (the active tasks)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor    ARGV[5] id
-- ARGV[6] the task's options as read    ARGV[7] its options with the operator's context    ARGV[8] its trace id
-- ARGV[9] the cancel channel    ARGV[10] the cancel message
-- Returns how many workers heard the request; errors NOT_FOUND, PRECONDITION (not active, or options changed since
-- they were read).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local key, state = locate(ctx, ARGV[5], {active = KEYS[3]}, "not active")
if not key then return state end
local refused = operator_mark(ctx, key, ARGV[6], ARGV[7], ARGV[8])
if refused then return refused end
return redis.call("PUBLISH", ARGV[9], ARGV[10])
