-- workflow retry: an operator runs a failed workflow again from where it failed. Its failed members
-- (archived) -> pending, with their retry counts and last errors as they are (as Run does for an archived task);
-- its cancelled members (archived as "cancelled: ...") -> waiting again, registered in the dependency sets of
-- the members they wait for that have not succeeded, with the results of those that have (from the workflow's
-- record); one whose dependencies all succeeded meanwhile -> pending at once. The workflow is running again and
-- no longer expires. The on_error callback ran (or is queued) for the failure: it is not armed again.
-- Checked first, all or nothing: every failed or cancelled member must still be archived (a member an operator
-- deleted, ran or that the archive trimmed cannot be put back).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] workflow hash    KEYS[4] pending    KEYS[5] archived
-- KEYS[6] waiting
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] workflow id
-- Returns the number of members run again; errors NOT_FOUND (no such workflow, or its record expired),
-- PRECONDITION (the workflow has not failed, or a failed or cancelled member is no longer archived).
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local wkey = KEYS[3]
local state = redis.call("HGET", wkey, "state")
if not state then return redis.error_reply("NOT_FOUND workflow " .. ARGV[5]) end
if state ~= "failed" then
  return redis.error_reply("PRECONDITION workflow is " .. state .. ", only a failed workflow can be retried")
end
local redo = {}
for _, m in ipairs(workflow_members(wkey)) do
  local status = redis.call("HGET", wkey, "s:" .. m[1])
  if status == "failed" or status == "cancelled" then
    local now_in = redis.call("HGET", ctx.prefix .. m[1], "state")
    if now_in ~= "archived" then
      return redis.error_reply("PRECONDITION member " .. m[1] .. " (" .. m[2] .. ") " .. status .. " and is " ..
        (now_in and ("now " .. now_in) or "no longer stored") .. ": it cannot be run again as part of the workflow")
    end
    redo[#redo + 1] = {m, status}
  end
end
redis.call("HSET", wkey, "state", "running")
redis.call("HDEL", wkey, "failed", "error", "finished")
redis.call("PERSIST", wkey)
for _, r in ipairs(redo) do
  local id, ttype, after, status = r[1][1], r[1][2], r[1][4], r[2]
  local key = ctx.prefix .. id
  redis.call("HDEL", wkey, "s:" .. id)
  redis.call("ZREM", KEYS[5], id)
  if status == "failed" then
    to_pending(ctx, KEYS[4], key, id, ttype, "archived")
  else
    local pass = redis.call("HGET", key, "pass") == "1"
    local unmet, met = {}, {}
    for _, dep in ipairs(after) do
      if redis.call("HGET", wkey, "s:" .. dep) == "succeeded" then met[#met + 1] = dep else unmet[#unmet + 1] = dep end
    end
    redis.call("HDEL", key, "error", "failed_at")
    -- A member cancelled while pending or later was released once: its options carry its results already.
    local released = pass and cjson.decode(redis.call("HGET", key, "msg") or "{}").results ~= nil
    if pass and not released then
      for _, dep in ipairs(met) do
        redis.call("HSET", key, "r:" .. dep, result_json(redis.call("HGET", wkey, "r:" .. dep)))
      end
    end
    if #unmet > 0 then
      for _, dep in ipairs(unmet) do redis.call("SADD", queue_key(ctx, "deps:" .. dep), id) end
      redis.call("ZADD", KEYS[6], ctx.now, id)
      moved(ctx, key, id, ttype, "archived", "waiting", nil, nil, {"deps_left", #unmet})
    elseif pass and not released then
      release_waiting(ctx, key, id, ttype, nil, nil, "archived")  -- its dependencies all succeeded meanwhile
    else
      to_pending(ctx, KEYS[4], key, id, ttype, "archived")
    end
  end
end
finish(ctx)
return #redo
