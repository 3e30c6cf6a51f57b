-- submit: new tasks with dependencies, and optionally the workflow they make up. A task whose dependencies have
-- all succeeded already (or that has none) -> pending; the others -> waiting, each registered in deps:<dep> of
-- every dependency still to succeed (a dependency that does not exist yet is waited for: it may be submitted
-- later, the "B after A, B first" case). An on_error callback -> waiting until its workflow fails.
-- All-or-nothing: every precondition is checked before anything is written.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] waiting
-- KEYS[5] workflow hash (unused without a workflow)    KEYS[6] workflow index
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] workflow id ("" for none)    ARGV[6] workflow members (JSON [[id, type, role, after], ...])
-- ARGV[7] ms to keep the workflow after it ends    ARGV[8] how many members count towards its success
-- ARGV[9..] 6 values per task: id, type, options (msg), payload, after (JSON array of ids),
--           flags: role ("member", "on_success", "on_error", or "" outside a workflow), then "+p" to pass results
-- Returns "OK", or "NEW" when the queue had no event stream yet. Errors: "CONFLICT <i>" when task i's id exists
-- (i counts from 1; 0 names the workflow id), "PRECONDITION <detail>" when a dependency was archived (failed) or
-- the dependencies would close a cycle.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local WIDTH, FIRST = 6, 9
local n = (#ARGV - FIRST + 1) / WIDTH
local wf = ARGV[5]
if wf ~= "" and redis.call("EXISTS", KEYS[5]) == 1 then return redis.error_reply("CONFLICT 0") end
local conflict, ids = first_conflict(ctx, FIRST, WIDTH, n)
if conflict then return redis.error_reply("CONFLICT " .. conflict) end
-- Dependencies outside this call: an archived one has failed, so the new task could never run.
local outside = {}
for i = 0, n - 1 do
  for _, dep in ipairs(cjson.decode(ARGV[FIRST + i * WIDTH + 4])) do
    if not ids[dep] and outside[dep] == nil then
      local f = redis.call("HMGET", ctx.prefix .. dep, "state", "result")
      if f[1] == "archived" then return redis.error_reply("PRECONDITION dependency " .. dep .. " failed") end
      outside[dep] = f[1] == "completed" and result_json(f[2]) or false
    end
  end
end
-- A cycle (A after B, B after A, through any number of tasks) would wait forever: refuse it. The tasks waiting
-- for X are deps:<X> plus the ones of this call that name X; a depth-first walk along them from every new task
-- finds a task still on the walk's path again exactly when the new dependencies close a cycle. It visits only
-- the tasks downstream of this call's, so a call that nothing waits for yet costs one SMEMBERS per task.
local waited_by = {}
for i = 0, n - 1 do
  local id = ARGV[FIRST + i * WIDTH]
  for _, dep in ipairs(cjson.decode(ARGV[FIRST + i * WIDTH + 4])) do
    waited_by[dep] = waited_by[dep] or {}
    table.insert(waited_by[dep], id)
  end
end
local function waiters_of(id)
  local found = redis.call("SMEMBERS", queue_key(ctx, "deps:" .. id))
  for _, waiter in ipairs(waited_by[id] or {}) do found[#found + 1] = waiter end
  return found
end
local ON_PATH, DONE = 1, 2
local mark = {}
for i = 0, n - 1 do
  local start = ARGV[FIRST + i * WIDTH]
  if not mark[start] then
    mark[start] = ON_PATH
    local path = {{start, waiters_of(start), 0}}  -- iterative: a long chain must not exhaust Lua's stack
    while #path > 0 do
      local top = path[#path]
      top[3] = top[3] + 1
      local nxt = top[2][top[3]]
      if nxt == nil then
        mark[top[1]] = DONE
        path[#path] = nil
      elseif mark[nxt] == ON_PATH then
        return redis.error_reply("PRECONDITION dependency cycle through " .. nxt)
      elseif not mark[nxt] then
        mark[nxt] = ON_PATH
        path[#path + 1] = {nxt, waiters_of(nxt), 0}
      end
    end
  end
end
local new_queue = redis.call("EXISTS", KEYS[2]) == 0
local pending = {}
for i = 0, n - 1 do
  local a = FIRST + i * WIDTH
  local id, ttype, msg, after = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 4]
  local role, pass = string.match(ARGV[a + 5], "^([%a_]*)(%+?p?)$")
  local key = ctx.prefix .. id
  local fields = {"type", ttype, "payload", ARGV[a + 3]}
  local deps = cjson.decode(after)
  local left, results = 0, {}
  for j, dep in ipairs(deps) do
    if outside[dep] then
      results[j] = outside[dep]
    else
      left = left + 1
      redis.call("SADD", queue_key(ctx, "deps:" .. dep), id)
    end
  end
  if #deps > 0 then fields[#fields + 1] = "after"; fields[#fields + 1] = after end
  if pass == "+p" then fields[#fields + 1] = "pass"; fields[#fields + 1] = "1" end
  if wf ~= "" then
    fields[#fields + 1] = "wf"; fields[#fields + 1] = wf
    fields[#fields + 1] = "role"; fields[#fields + 1] = role
  end
  if left > 0 or role == "on_error" then
    -- The results of dependencies that succeeded already wait with the task for the others'.
    for j, dep in ipairs(deps) do
      if pass == "+p" and results[j] then fields[#fields + 1] = "r:" .. dep; fields[#fields + 1] = results[j] end
    end
    fields[#fields + 1] = "deps_left"; fields[#fields + 1] = left
    fields[#fields + 1] = "msg"; fields[#fields + 1] = msg
    redis.call("ZADD", KEYS[4], ctx.now, id)
    moved(ctx, key, id, ttype, "", "waiting", nil, nil, fields)
  else
    -- Every dependency had succeeded already: straight to pending, with their results when asked for.
    if pass == "+p" and #deps > 0 then msg = with_option(msg, "results", "[" .. table.concat(results, ",") .. "]") end
    fields[#fields + 1] = "msg"; fields[#fields + 1] = msg
    pending[#pending + 1] = id
    moved(ctx, key, id, ttype, "", "pending", nil, nil, fields)
  end
end
push_pending(KEYS[3], pending)
if wf ~= "" then
  redis.call("HSET", KEYS[5], "state", "running", "created", ctx.now, "members", ARGV[6], "keep", ARGV[7],
    "left", ARGV[8])
  for i = 0, n - 1 do
    if string.match(ARGV[FIRST + i * WIDTH + 5], "^on_error") then
      redis.call("HSET", KEYS[5], "on_error", ARGV[FIRST + i * WIDTH])
    end
  end
  redis.call("ZADD", KEYS[6], ctx.now, wf)
end
finish(ctx)
if new_queue then return "NEW" end
return "OK"
