-- Shared helpers. scripts.py puts this file in front of every transition script, so each script states only
-- its own precondition and effect. Conventions for all scripts:
--   * times are epoch milliseconds handed in by the caller (the injected clock), never read from Redis;
--   * a task hash is <task key prefix> .. id; it carries the queue's {hash tag}, so it shares the slot of the
--     keys the script declares, and no script ever spans two Cluster slots;
--   * a refused precondition returns an error reply "<CODE> <detail>" before anything is written.

-- Per-type counts and counters are tallied in ctx and written once per call by finish(ctx): a batch of a
-- thousand tasks costs a handful of HINCRBYs, not two thousand. Every script that moves tasks ends with it.
-- ctx.now is the time as a number, for arithmetic and comparisons; ctx.at is the same time as the caller wrote it,
-- for the fields and events that store it: a Lua number handed to redis.call is formatted anew (as %.14g) on each
-- call, which costs more than the command that stores it.
local function new_context(types, events, prefix, now, maxlen, actor)
  return {types = types, events = events, prefix = prefix, now = tonumber(now), at = tostring(now), maxlen = maxlen,
          actor = actor, tally = {}}
end

local function tally(ctx, field, delta)
  ctx.tally[field] = (ctx.tally[field] or 0) + delta
end

local function finish(ctx)
  for field, delta in pairs(ctx.tally) do
    if delta ~= 0 then redis.call("HINCRBY", ctx.types, field, delta) end
  end
  if not ctx.counters then return end
  for key, n in pairs(ctx.counters) do
    if redis.call("INCRBY", key, n) == n and ctx.ttls[key] then redis.call("EXPIRE", key, ctx.ttls[key]) end
  end
end

-- How the stream is trimmed, read once per script call. Without an exporter: MAXLEN ~ maxlen. With one (its
-- offset hash <events>:exporter exists; keys.py QueueKeys.event_offset builds the same name, and it shares the
-- stream's hash tag and so its slot): MINID ~ at the exporter's committed id, so trimming never removes an event
-- the exporter has not stored yet, plus the hash's hard cap as a safety net against an exporter that stopped.
local function trimming(ctx)
  if ctx.trim == nil then
    local offset = redis.call("HMGET", ctx.events .. ":exporter", "committed", "cap")
    if offset[1] then
      ctx.trim = {minid = offset[1], cap = tonumber(offset[2]) or 0}
    else
      ctx.trim = false
    end
  end
  return ctx.trim
end

-- Whether key exists. When the call has not read the exporter's offset hash yet (trimming), the same EXISTS reads
-- whether that exists too, saving trimming its HMGET when it does not: key is named twice, so it counts 2 and the
-- hash 1.
local function exists_noting_exporter(ctx, key)
  if ctx.trim ~= nil then return redis.call("EXISTS", key) == 1 end
  local present = redis.call("EXISTS", key, key, ctx.events .. ":exporter")
  if present % 2 == 0 then ctx.trim = false end
  return present >= 2
end

-- Append one transition to the queue's capped event stream (read by the live console and the exporter).
-- The three events of a plain task's life (an enqueue, a start, a success), on a queue without an exporter, go out
-- with their fields written in the call: the table the general case builds, grown past its first ten fields, is
-- the costliest allocation of those scripts.
local function emit(ctx, id, ttype, from, to, err)
  if not (err and err ~= "") and not trimming(ctx) then
    local actor, lease, started = ctx.actor, ctx.lease, ctx.started
    if actor == "" and not lease and not started and not ctx.trace then
      redis.call("XADD", ctx.events, "MAXLEN", "~", ctx.maxlen, "*", "id", id, "type", ttype, "from", from, "to", to,
        "at", ctx.at)
      return
    elseif actor ~= "" and lease and not started then
      redis.call("XADD", ctx.events, "MAXLEN", "~", ctx.maxlen, "*", "id", id, "type", ttype, "from", from, "to", to,
        "at", ctx.at, "worker", actor, "lease", lease)
      return
    elseif actor ~= "" and started and not lease then
      redis.call("XADD", ctx.events, "MAXLEN", "~", ctx.maxlen, "*", "id", id, "type", ttype, "from", from, "to", to,
        "at", ctx.at, "worker", actor, "started", started)
      return
    end
  end
  local fields = {"id", id, "type", ttype, "from", from, "to", to, "at", ctx.at}
  if ctx.actor ~= "" then
    fields[#fields + 1] = "worker"
    fields[#fields + 1] = ctx.actor
  end
  if err and err ~= "" then
    fields[#fields + 1] = "error"
    fields[#fields + 1] = err
  end
  if ctx.lease then  -- a start (dequeue.lua): the attempt's lease token, for the task's timeline
    fields[#fields + 1] = "lease"
    fields[#fields + 1] = ctx.lease
  end
  if ctx.started then  -- an attempt's end: when its handler started (ms), for the task's timeline
    fields[#fields + 1] = "started"
    fields[#fields + 1] = ctx.started
  end
  if ctx.trace then  -- an operator's action (operator_mark): the trace id of the operator's request
    fields[#fields + 1] = "trace"
    fields[#fields + 1] = ctx.trace
  end
  local trim = trimming(ctx)
  if not trim then
    redis.call("XADD", ctx.events, "MAXLEN", "~", ctx.maxlen, "*", unpack(fields))
    return
  end
  redis.call("XADD", ctx.events, "MINID", "~", trim.minid, "*", unpack(fields))
  if trim.cap > 0 and redis.call("XLEN", ctx.events) > trim.cap then
    redis.call("XTRIM", ctx.events, "MAXLEN", "~", trim.cap)
  end
end

-- A key of the task's queue other than the ones a script declares, built from the task key prefix (<queue base>t:):
-- it carries the queue's {hash tag} and so shares the slot of the declared keys, as task hashes do.
local function queue_key(ctx, name)
  return string.sub(ctx.prefix, 1, #ctx.prefix - 2) .. name
end

-- A periodic entry's run is a task whose id is "cron:<entry id>:<tick ms>" (":manual" after it when an operator ran
-- the entry by hand; periodic.py). When such a task ends an attempt or leaves its queue, its record in the entry's
-- history (queue_key "cron:history:<entry id>", keys.py QueueKeys.cron_history, scored by tick) takes the outcome,
-- when it ended and how long the attempt ran. Written here, inside the transition, so it holds on every path (the
-- worker's acks, the recoverer, an operator's archive or delete) and when the task is deleted on success; any other
-- task pays one string compare. A run whose record was trimmed, or a task that merely looks like one, writes
-- nothing. A final outcome stays: the janitor deleting a completed run later is not news.
local CRON_OUTCOMES = {done = "completed", completed = "completed", retry = "failed", archived = "archived",
  deleted = "deleted", expired = "expired"}
local CRON_FINAL = {completed = true, archived = true, deleted = true, expired = true}

local function cron_run_ended(ctx, key, id, from, to)
  local outcome = CRON_OUTCOMES[to]
  if not outcome then return end
  local entry, tick = string.match(id, "^cron:([^:]+):(%d+)")
  if not entry then return end
  local history = queue_key(ctx, "cron:history:" .. entry)
  for _, raw in ipairs(redis.call("ZRANGEBYSCORE", history, tick, tick)) do
    local ok, rec = pcall(cjson.decode, raw)
    if ok and type(rec) == "table" and rec.task_id == id then
      if CRON_FINAL[rec.outcome] then return end
      rec.outcome, rec.ended = outcome, ctx.now
      if from == "active" then
        -- The handler's start when the worker reports it, else when the task went active (its "since", read
        -- before moved() overwrites it): the recoverer ends attempts whose worker is gone.
        local started = tonumber(ctx.started or redis.call("HGET", key, "since"))
        if started then rec.ran_ms = math.max(0, ctx.now - started) end
        rec.attempts = (tonumber(rec.attempts) or 0) + 1
      end
      redis.call("ZREM", history, raw)
      redis.call("ZADD", history, tick, cjson.encode(rec))
      return
    end
  end
end

-- Record a move between states: the hash's state (with any extra fields, in the same HSET), the per-type
-- counts (an O(1) breakdown for the console) and the event. to == "" means the task has left the queue;
-- event_to then names how (done, deleted).
local function moved(ctx, key, id, ttype, from, to, err, event_to, extra)
  if string.sub(id, 1, 5) == "cron:" then cron_run_ended(ctx, key, id, from, event_to or to) end
  if from ~= "" then tally(ctx, from .. ":" .. ttype, -1) end
  if to ~= "" then
    tally(ctx, to .. ":" .. ttype, 1)
    if extra then
      redis.call("HSET", key, "state", to, "since", ctx.at, unpack(extra))
    else
      redis.call("HSET", key, "state", to, "since", ctx.at)
    end
  end
  emit(ctx, id, ttype, from, event_to or to, err)
end

-- Lease: pending -> active for up to k tasks, each under a fresh lease (expiry ms; token_prefix .. n, unique to
-- the call). The one implementation of leasing: dequeue.lua calls it, and so do the ack scripts (done.lua,
-- complete.lua) when they fetch on ack (lease_after_ack). Nothing from a paused queue; with a concurrency cap
-- (> 0) nothing beyond cap active tasks in the queue, whichever workers hold them (the lease set is the queue's
-- active set across all workers, so its size is the count to cap); with a rate limit (> 0) nothing beyond limit
-- starts in any period ms (a sliding-window log: the starts set holds one member <task id>@<lease token> per
-- start, scored by the caller's now, and is shared by every worker and consumer of the queue). Returns the time
-- (ms) from which the rate limit admits another start, 0 when it holds nothing back, then 7 values per task: id,
-- type, options, payload, retried, lease token, pending since (ms). Nothing is written when no task is taken.
-- When the rate window (starts after window_start) holds n >= limit starts, another is admitted once all but
-- limit - 1 of them have left it: at the time of its (n - limit + 1)-th oldest start plus the period. Starts stamped
-- after now (by a caller whose clock runs ahead) count too, so no window over the recorded times ever holds more
-- than limit starts. (A function of its own, not a closure made by each lease_next call.)
local function admitted_from(starts_key, window_start, limit, period, in_window)
  if in_window < limit then return 0 end
  local oldest = redis.call("ZRANGEBYSCORE", starts_key, "(" .. window_start, "+inf", "WITHSCORES", "LIMIT",
    in_window - limit, 1)
  return tonumber(oldest[2]) + period
end

-- What lease_next must know before it takes anything, in one EXISTS whose count is a bit set (each key is named as
-- often as its bit's value): 2 when the queue is paused, 4 when its pending list is not empty, and 1 when the
-- exporter's offset hash exists, read only when this call has not read it yet (then trimming needs no HMGET).
local function lease_flags(ctx, paused, pending)
  if ctx.trim ~= nil then return redis.call("EXISTS", paused, paused, pending, pending, pending, pending) end
  local n = redis.call("EXISTS", ctx.events .. ":exporter", paused, paused, pending, pending, pending, pending)
  if n % 2 == 0 then ctx.trim = false end
  return n
end

local function lease_next(ctx, pending, lease_key, paused, starts_key, expiry, token_prefix, k, cap, limit, period)
  local flags = lease_flags(ctx, paused, pending)
  if flags % 4 >= 2 then return {0} end  -- paused
  -- Nothing pending: nothing to take (an ack that fetches on an empty queue, a worker woken for nothing) and no RPOP
  -- to find it out. Under a rate limit the reply still says when it admits the next start (below).
  if flags < 4 and limit <= 0 then return {0} end
  if cap > 0 then
    k = math.min(k, cap - redis.call("ZCARD", lease_key))
    if k <= 0 then return {0} end
  end
  local window_start = ctx.now - period -- a start counts while its time is after this
  local in_window = 0
  if limit > 0 then
    in_window = redis.call("ZCOUNT", starts_key, "(" .. window_start, "+inf")
    k = math.min(k, limit - in_window)
    if k <= 0 then return {admitted_from(starts_key, window_start, limit, period, in_window)} end
  end
  local ids = redis.call("RPOP", pending, k)
  if not ids then return {0} end
  local out, leases, starts = {0}, {}, {}
  for i, id in ipairs(ids) do
    local key = ctx.prefix .. id
    local f = redis.call("HMGET", key, "type", "msg", "payload", "retried", "since")
    -- An id without a hash (never expected) is dropped rather than handed out as a task that cannot run.
    if f[1] then
      local token = token_prefix .. i
      leases[#leases + 1] = expiry
      leases[#leases + 1] = id
      if limit > 0 then  -- the rate log's member is a new string per task: made only when a limit reads it
        starts[#starts + 1] = ctx.at
        starts[#starts + 1] = id .. "@" .. token
      end
      ctx.lease = token  -- into the event too (see emit)
      moved(ctx, key, id, f[1], "pending", "active", nil, nil, {"lease", token})
      ctx.lease = nil
      out[#out + 1] = id
      out[#out + 1] = f[1]
      out[#out + 1] = f[2] or ""
      out[#out + 1] = f[3] or ""
      out[#out + 1] = f[4] or "0"
      out[#out + 1] = token
      out[#out + 1] = f[5] or "0"
    end
  end
  if #leases > 0 then redis.call("ZADD", lease_key, unpack(leases)) end
  if limit > 0 and #starts > 0 then
    -- Starts that left the window never count again; the key expires after a quiet minute past the period (only
    -- housekeeping: the window is always judged by the recorded times, never by the key's age).
    redis.call("ZREMRANGEBYSCORE", starts_key, "-inf", window_start)
    redis.call("ZADD", starts_key, unpack(starts))
    redis.call("PEXPIRE", starts_key, period + 60000)
    out[1] = admitted_from(starts_key, window_start, limit, period, in_window + #starts / 2)
  end
  return out
end

-- Fetch-on-ack: an ack script (done.lua, complete.lua) that ended a batch's attempts leases the next tasks of the
-- same queue for the slots it freed, saving the worker a dequeue call. ARGV[first_arg..first_arg + 6] hold k (most
-- tasks for freed slots, 0: lease nothing), ahead (most tasks more, to wait in the worker: its prefetch), then lease
-- expiry, token prefix, cap, rate limit and period as dequeue.lua's ARGV[5..10]; KEYS from first_key on the
-- queue's pending list, paused flag and starts set. Only an ack the fence let through frees a slot, and an ack
-- that frees none leases nothing, ahead included: a stale ack (the lease was lost, the task recovered) leases
-- nothing. The cap is counted after the acked tasks left the lease set. Returns the statuses as they are when k
-- and ahead are 0, else {statuses, lease_next's reply}.
local function lease_after_ack(ctx, statuses, lease_key, first_key, first_arg)
  local k = tonumber(ARGV[first_arg]) or 0
  local ahead = tonumber(ARGV[first_arg + 1]) or 0
  if k <= 0 and ahead <= 0 then return statuses end
  local freed = 0
  for _, status in ipairs(statuses) do
    if status == "OK" then freed = freed + 1 end
  end
  local leased = {0}
  if freed > 0 then
    local a = first_arg + 2
    leased = lease_next(ctx, KEYS[first_key], lease_key, KEYS[first_key + 1], KEYS[first_key + 2], ARGV[a],
      ARGV[a + 1], math.min(k, freed) + ahead, tonumber(ARGV[a + 2]) or 0,
      tonumber(ARGV[a + 3]) or 0, tonumber(ARGV[a + 4]) or 0)
  end
  return {statuses, leased}
end

-- A unique lock is released only by the task that holds it (another task may hold it by now).
local function release_unique(key, id)
  local ukey = redis.call("HGET", key, "unique")
  if ukey and redis.call("GET", ukey) == id then redis.call("DEL", ukey) end
end

-- Push ids onto the pending list in chunks (unpack has a stack limit), waking idle workers if it was empty.
local function push_pending(pending, ids)
  for first = 1, #ids, 1000 do
    local last = math.min(first + 999, #ids)
    local length = redis.call("LPUSH", pending, unpack(ids, first, last))
    if length == last - first + 1 then redis.call("PUBLISH", pending, "") end
  end
end

-- Add the (member, score) pairs of a ZRANGE ... WITHSCORES reply to the sorted set dest, in chunks (unpack has
-- a stack limit), keeping each member's score.
local function zadd_scored(dest, scored)
  for first = 1, #scored, 1000 do
    local last = math.min(first + 999, #scored)
    local members = {}
    for i = first, last, 2 do
      members[#members + 1] = scored[i + 1]
      members[#members + 1] = scored[i]
    end
    redis.call("ZADD", dest, unpack(members))
  end
end

-- The position (from 1) of the first of n new tasks whose id exists or repeats an earlier one in the call; else
-- nil and the set of the new ids. ARGV holds, from position first on, groups of width values that start with the id.
local function first_conflict(ctx, first, width, n)
  local ids = {}
  for i = 0, n - 1 do
    local id = ARGV[first + i * width]
    if ids[id] or redis.call("EXISTS", ctx.prefix .. id) == 1 then return i + 1 end
    ids[id] = true
  end
  return nil, ids
end

-- Delete a task outright; the caller has already taken its id out of the state structure.
local function drop(ctx, key, id, ttype, from, why)
  release_unique(key, id)
  redis.call("DEL", key)
  moved(ctx, key, id, ttype, from, "", why, "deleted")
end

-- The attempt fence. The task must be active under exactly this lease token: a worker whose lease expired and
-- whose task was recovered (and perhaps handed to another attempt) holds a stale token and is refused, where
-- asynq fences by task id only. The hash's state and token are the fence: every script that takes a task out of
-- the lease set changes its state in the same call, so its entry there is not read again for an ack (a call per
-- task on the worker's hot path). With expired_before (the recoverer), the lease must also have run out by then,
-- so a heartbeat that extended it in the meantime wins: that reads the entry's expiry. Returns nil and the task's
-- type, unique key, workflow, role and keep (see mark_kept) when the fence holds (read with its state in one HMGET:
-- an ack needs them all), else an error code.
local function fence(lease_key, key, id, token, expired_before)
  local f = redis.call("HMGET", key, "state", "lease", "type", "unique", "wf", "role", "keep")
  if not f[1] then return "NOT_FOUND" end
  if f[1] ~= "active" or f[2] ~= token then return "LEASE_LOST" end
  if expired_before and expired_before ~= "" then
    local expiry = redis.call("ZSCORE", lease_key, id)
    if not expiry then return "LEASE_LOST" end
    if tonumber(expiry) > tonumber(expired_before) then return "PRECONDITION" end
  end
  return nil, f[3], f[4], f[5], f[6], f[7]
end

-- The start times (ms) of a batch's attempts, from the comma-separated list the worker sends ("0": unknown).
local function start_times(text)
  if not string.find(text, ",", 1, true) then  -- one attempt (or none): no pattern iterator to build
    if text == "" then return {} end
    return {text ~= "0" and text}
  end
  local times = {}
  for value in string.gmatch(text, "[^,]+") do times[#times + 1] = value ~= "0" and value or false end
  return times
end

-- How long the attempt that ends now ran (ms), kept in the task hash as "ran_ms" so the console's tables show a
-- finished task's run time without reading the event stream; "" where its handler's start is unknown (the
-- recoverer ends attempts whose worker is gone), which also drops the figure of an earlier attempt. Callers put it
-- in an HSET they make anyway: the ack scripts are the worker's hot path.
local function ran_ms(ctx)
  local started = tonumber(ctx.started)
  if not started then return "" end
  return math.max(0, ctx.now - started)
end

-- Release a unique lock already read from the task (see release_unique).
local function release_lock(ukey, id)
  if ukey and redis.call("GET", ukey) == id then redis.call("DEL", ukey) end
end

-- Run fn for each task of a batch whose fence holds. ARGV holds, from position first on, groups of width values
-- that start with id and lease token; fn(a, id, key, ttype, ukey, wf, role, keep) gets the group's position, and wf,
-- role and keep as the fence read them (see after_success, mark_kept); fn may refuse the task itself by
-- returning a code. Returns one status per task: "OK", or the code that refused it (a refused task is left as it
-- was).
local function each_fenced(ctx, lease_key, first, width, fn)
  local out = {}
  for a = first, #ARGV, width do
    local id = ARGV[a]
    local key = ctx.prefix .. id
    local refused, ttype, ukey, wf, role, keep = fence(lease_key, key, id, ARGV[a + 1])
    if not refused then refused = fn(a, id, key, ttype, ukey, wf, role, keep) end
    out[#out + 1] = refused or "OK"
  end
  return out
end

-- An operator's single-task action: find the task and check that its state is one the action takes (a key of
-- structures, mapping states to the key holding them). Returns the task's key, state, type and structure, or
-- an error reply to return as is.
local function locate(ctx, id, structures, action)
  local key = ctx.prefix .. id
  local f = redis.call("HMGET", key, "state", "type")
  if not f[1] then return nil, redis.error_reply("NOT_FOUND " .. id) end
  local from = structures[f[1]]
  if not from then return nil, redis.error_reply("PRECONDITION task is " .. f[1] .. ", " .. action) end
  return key, f[1], f[2], from
end

-- An operator's action on one task records the operator's trace context (operator_trace.py): the task's options
-- (msg) as they were read (expected), the same options with the context in their headers, and its trace id, which the
-- action's events carry (emit). The options are replaced only if they are still the ones read, so a concurrent
-- change is never overwritten. No expected options: nothing to record. Call it after every other check of the
-- action: it writes. Returns nil, or the error reply to return as is.
local function operator_mark(ctx, key, expected, options, trace)
  if not expected or expected == "" then return nil end
  if redis.call("HGET", key, "msg") ~= expected then
    return redis.error_reply("PRECONDITION the task's options changed while the action was taken; nothing was " ..
      "changed, try again")
  end
  redis.call("HSET", key, "msg", options)
  if trace ~= "" then ctx.trace = trace end
  return nil
end

-- Take a task out of the active set after its fence held.
local function leave_active(lease_key, key, id)
  redis.call("ZREM", lease_key, id)
  redis.call("HDEL", key, "lease")
end

-- An attempt's end: check the fence (see fence), then take the task out of the active set. Returns the task's
-- key, type and unique key, or nil and the error reply to return when the fence refused it.
local function end_attempt(ctx, lease_key, id, token, expired_before)
  local key = ctx.prefix .. id
  local refused, ttype, ukey = fence(lease_key, key, id, token, expired_before)
  if refused then return nil, redis.error_reply(refused .. " " .. id) end
  leave_active(lease_key, key, id)
  return key, ttype, ukey
end

-- Count a finished attempt in the total, today's counter (which expires) and the per-type total.
-- The tables are made on the first count of a call, and hold plain numbers: a script that counts nothing makes none,
-- and a batch makes two however many tasks it counts (each table a Lua allocation, and garbage after the call).
local function count(ctx, total_key, day_key, day_ttl, name, ttype)
  local counters = ctx.counters
  if not counters then
    counters = {}
    ctx.counters, ctx.ttls = counters, {}
  end
  counters[total_key] = (counters[total_key] or 0) + 1
  counters[day_key] = (counters[day_key] or 0) + 1
  ctx.ttls[day_key] = day_ttl
  tally(ctx, name .. ":" .. ttype, 1)
end

-- A failed attempt's traceback and error group (see failures.py). The traceback goes into the task's hash ("" drops
-- a previous one: a lease that expired has none). With a fingerprint, the group <fingerprint>|<type> of the queue
-- counts it: the hash errors holds n|, f| (first seen, ms), s| (latest task id) and d| (its label) per group, the
-- sorted set seen its last seen time. Only a new group adds memory, so only then are the groups trimmed: those
-- unseen for max_age (ms), and the least recently seen beyond max_groups, at most TRIM_GROUPS per call. A known
-- group's failure costs four commands.
local TRIM_GROUPS = 10
local function record_failure(ctx, key, id, ttype, errors, seen, tb, fp, label, max_groups, max_age)
  if fp == "" then
    if tb ~= "" then redis.call("HSET", key, "traceback", tb) else redis.call("HDEL", key, "traceback") end
    redis.call("HDEL", key, "fp")
    return
  end
  if tb ~= "" then redis.call("HSET", key, "traceback", tb, "fp", fp) else redis.call("HSET", key, "fp", fp) end
  local group = fp .. "|" .. ttype
  redis.call("HINCRBY", errors, "n|" .. group, 1)
  if redis.call("ZADD", seen, ctx.now, group) == 0 then
    redis.call("HSET", errors, "s|" .. group, id)
    return
  end
  redis.call("HSET", errors, "s|" .. group, id, "f|" .. group, ctx.now, "d|" .. group, label)
  local gone = redis.call("ZRANGEBYSCORE", seen, "-inf", "(" .. (ctx.now - tonumber(max_age)), "LIMIT", 0, TRIM_GROUPS)
  local over = redis.call("ZCARD", seen) - #gone - tonumber(max_groups)
  if over > 0 then
    for _, old in ipairs(redis.call("ZRANGE", seen, #gone, #gone + math.min(over, TRIM_GROUPS) - 1)) do
      gone[#gone + 1] = old
    end
  end
  for _, old in ipairs(gone) do
    redis.call("ZREM", seen, old)
    redis.call("HDEL", errors, "n|" .. old, "f|" .. old, "s|" .. old, "d|" .. old)
  end
end

-- Keep the archive within its age and size limits, deleting what falls out for real (asynq dropped only the
-- ids and kept the hashes: its #441 and #730). At most TRIM_BATCH deletions per call keep scripts short;
-- the next archive, or the janitor, continues.
local TRIM_BATCH = 100
local function trim_archive(ctx, archived, max_size, max_age)
  local victims = redis.call("ZRANGEBYSCORE", archived, "-inf", "(" .. (ctx.now - tonumber(max_age)),
    "LIMIT", 0, TRIM_BATCH)
  local excess = redis.call("ZCARD", archived) - #victims - tonumber(max_size)
  if excess > 0 and #victims < TRIM_BATCH then
    local oldest = redis.call("ZRANGE", archived, #victims, #victims + math.min(excess, TRIM_BATCH - #victims) - 1)
    for _, id in ipairs(oldest) do victims[#victims + 1] = id end
  end
  for _, id in ipairs(victims) do
    local key = ctx.prefix .. id
    redis.call("ZREM", archived, id)
    drop(ctx, key, id, redis.call("HGET", key, "type") or "", "archived", "trimmed from the archive")
  end
  return #victims
end

-- One command for many items (ZREM's members of key, or DEL's keys when key is nil) instead of a call per item: in
-- a batch's script each redis.call costs more than the command it runs. In chunks (unpack has a stack limit) of an
-- even size, so that ZADD's score-member pairs stay whole.
local function call_chunked(command, key, items)
  for first = 1, #items, 1000 do
    local last = math.min(first + 999, #items)
    if key then
      redis.call(command, key, unpack(items, first, last))
    else
      redis.call(command, unpack(items, first, last))
    end
  end
end

-- The batch of an ack script (done.lua, complete.lua): every task fenced first, then those the fence let through taken
-- out of the lease set in one ZREM, then fn(a, id, key, ttype, ukey, wf, role, keep) called for each, in order (as
-- each_fenced calls it). The ZREM is the script's first write: over maxmemory a script runs until its first command
-- that could grow memory unless it has written already, and an ack must go through then (it frees memory). An
-- attempt named twice in one call is refused the second time with repeat_code, what the fence would say once the
-- first was applied. Returns one status per task, as each_fenced.
local function ack_batch(ctx, lease_key, first, width, repeat_code, fn)
  local seen, acked, ids = {}, {}, {}
  local out = each_fenced(ctx, lease_key, first, width, function(a, id, key, ttype, ukey, wf, role, keep)
    if seen[id] then return repeat_code end
    seen[id] = true
    acked[#acked + 1] = {a, id, key, ttype, ukey, wf, role, keep}
    ids[#ids + 1] = id
  end)
  call_chunked("ZREM", lease_key, ids)
  for _, t in ipairs(acked) do
    fn(unpack(t, 1, 8))  -- explicit bounds: ukey, wf, role or keep may be nil
  end
  return out
end

-- The structure of a state: pending is a list, the others sorted sets.
local function remove_from(state_key, state, id)
  if state == "pending" then return redis.call("LREM", state_key, 1, id) end
  return redis.call("ZREM", state_key, id)
end

-- Remove up to limit ids from a state's structure, oldest first, and return them.
local function take(state_key, state, limit)
  if state == "pending" then return redis.call("RPOP", state_key, limit) or {} end
  local ids = redis.call("ZRANGE", state_key, 0, limit - 1)
  if #ids > 0 then redis.call("ZREM", state_key, unpack(ids)) end
  return ids
end

-- Idle workers wait for a message on a channel named after the pending list. Only the push that makes the
-- list non-empty publishes: a worker keeps dequeuing until the list is empty, so it needs no other signal,
-- and a busy queue costs no messages.
local function notify_if_first(pending, length)
  if length == 1 then redis.call("PUBLISH", pending, "") end
end

-- Put a task at the end of the pending line (LPUSH in, RPOP out).
local function to_pending(ctx, pending, key, id, ttype, from)
  notify_if_first(pending, redis.call("LPUSH", pending, id))
  moved(ctx, key, id, ttype, from, "pending")
end

-- == Dependencies and workflows (see dependencies.py and workflows.py) ==============================================
-- A task that must wait for others is "waiting": its id sits in the queue's ZSET waiting (scored by when it was
-- submitted) and its hash carries after (JSON array of the ids it waits for), deps_left (how many of them have
-- not succeeded yet), pass ("1": it gets their results) and r:<dep> (a dependency's result, as a JSON value,
-- while it waits for the others). Each dependency A has a SET deps:<A> of the ids waiting for it. The script
-- that records A's success releases its dependents; the script that archives A archives them. Workflow members
-- also carry wf (the workflow id) and role (member, on_success, on_error); the workflow is the hash wf:<id>.
-- These keys are built from the task key prefix (<queue base>t:) with queue_key (defined above, with moved).

-- A JSON value of a result: results are written as JSON by Task.write_result; raw bytes go in as a JSON string.
local function result_json(result)
  if not result then return "null" end
  local ok = pcall(cjson.decode, result)
  if ok then return result end
  return cjson.encode(result)
end

-- The options document (msg) with one more top-level member. msg is always a JSON object written by Python.
local function with_option(msg, name, json_value)
  return string.sub(msg, 1, #msg - 1) .. "," .. cjson.encode(name) .. ":" .. json_value .. "}"
end

-- waiting -> pending: all dependencies succeeded (or, for an on_error callback, its workflow failed: extra
-- then carries the failure). The collected results go into the options as "results", in the order of after.
-- from names another state the task leaves (a cancelled workflow member retried: archived).
local function release_waiting(ctx, key, id, ttype, extra_name, extra_json, from)
  local f = redis.call("HMGET", key, "after", "pass", "msg")
  local msg = f[3] or "{}"
  if f[2] == "1" and f[1] then
    local parts = {}
    for i, dep in ipairs(cjson.decode(f[1])) do
      parts[i] = redis.call("HGET", key, "r:" .. dep) or "null"
      redis.call("HDEL", key, "r:" .. dep)
    end
    msg = with_option(msg, "results", "[" .. table.concat(parts, ",") .. "]")
  end
  if extra_name then msg = with_option(msg, extra_name, extra_json) end
  redis.call("ZREM", queue_key(ctx, "waiting"), id)
  redis.call("HDEL", key, "deps_left")
  redis.call("HSET", key, "msg", msg)
  to_pending(ctx, queue_key(ctx, "pending"), key, id, ttype, from or "waiting")
end

-- A waiting task leaves the dependency sets it is registered in (deps:<dep> of each dependency still to succeed),
-- so the end of a dependency no longer touches it (an operator deleted it, or ran it without them).
local function leave_dependencies(ctx, key, id)
  local after = redis.call("HGET", key, "after")
  if not after then return end
  for _, dep in ipairs(cjson.decode(after)) do redis.call("SREM", queue_key(ctx, "deps:" .. dep), id) end
end

-- waiting -> gone, for the on_error callback of a workflow that succeeded.
local function drop_waiting(ctx, key, id, why)
  redis.call("ZREM", queue_key(ctx, "waiting"), id)
  drop(ctx, key, id, redis.call("HGET", key, "type") or "", "waiting", why)
end

-- A member reached its end: the workflow records it (s:<id> = succeeded, failed or cancelled) and, for a success,
-- its result (r:<id>). A workflow hash that expired is not re-created.
local function record_member(wkey, id, status, result)
  if redis.call("EXISTS", wkey) == 0 then return false end
  redis.call("HSET", wkey, "s:" .. id, status)
  if result then redis.call("HSET", wkey, "r:" .. id, result) end
  return true
end

-- The workflow ended: it is kept for its keep time, and the index forgets workflows older than that.
local function workflow_ended(ctx, wkey, state)
  redis.call("HSET", wkey, "state", state, "finished", ctx.now)
  local keep = tonumber(redis.call("HGET", wkey, "keep")) or 0
  if keep > 0 then
    redis.call("PEXPIRE", wkey, keep)
    redis.call("ZREMRANGEBYSCORE", queue_key(ctx, "workflows"), "-inf", "(" .. (ctx.now - keep))
  end
end

-- The ids waiting for task ``id`` (its dependency set), and the set removed: each is released or cancelled once.
local function take_dependents(ctx, id)
  local dkey = queue_key(ctx, "deps:" .. id)
  local dependents = redis.call("SMEMBERS", dkey)
  if #dependents > 0 then redis.call("DEL", dkey) end
  return dependents
end

-- A task succeeded (done or completed): record it in its workflow, release its dependents. Call it before the
-- task's hash is deleted: its result is read from it, only when a workflow or a dependent takes it (a plain task's
-- success reads nothing more). wf and role: the task's workflow and role, as the fence read them.
local function after_success(ctx, key, id, wf, role)
  local result
  if wf then
    local wkey = queue_key(ctx, "wf:" .. wf)
    result = redis.call("HGET", key, "result")
    if record_member(wkey, id, "succeeded", result) and role == "member" then
      local left = redis.call("HINCRBY", wkey, "left", -1)
      if left <= 0 and redis.call("HGET", wkey, "state") == "running" then
        workflow_ended(ctx, wkey, "succeeded")
        local on_error = redis.call("HGET", wkey, "on_error")
        if on_error and on_error ~= "" then
          local ekey = ctx.prefix .. on_error
          if redis.call("HGET", ekey, "state") == "waiting" then
            drop_waiting(ctx, ekey, on_error, "workflow succeeded")
            redis.call("HSET", wkey, "s:" .. on_error, "skipped")
          end
        end
      end
    end
  end
  local dependents = take_dependents(ctx, id)
  if #dependents == 0 then return end
  if not wf then result = redis.call("HGET", key, "result") end
  local value = result_json(result)
  for _, dep in ipairs(dependents) do
    local dep_key = ctx.prefix .. dep
    local d = redis.call("HMGET", dep_key, "state", "type", "pass")
    if d[1] == "waiting" then
      if d[3] == "1" then redis.call("HSET", dep_key, "r:" .. id, value) end
      if redis.call("HINCRBY", dep_key, "deps_left", -1) <= 0 then release_waiting(ctx, dep_key, dep, d[2]) end
    end
  end
end

-- A task failed for good (archived, or deleted): its waiting dependents are archived in turn, and a workflow it
-- belongs to fails: every member still waiting is archived as cancelled, and the on_error callback is released
-- with the failure. status is what the workflow records for this task (failed, or cancelled in a cascade).
local after_failure

local function cancel_waiting(ctx, key, id, why)
  local ttype = redis.call("HGET", key, "type") or ""
  redis.call("ZREM", queue_key(ctx, "waiting"), id)
  release_unique(key, id)
  redis.call("ZADD", queue_key(ctx, "archived"), ctx.now, id)
  redis.call("HDEL", key, "deps_left")
  redis.call("HSET", key, "error", why, "failed_at", ctx.now)
  moved(ctx, key, id, ttype, "waiting", "archived", why)
  after_failure(ctx, key, id, why, "cancelled")
end

local function workflow_failed(ctx, wkey, id, ttype, err)
  redis.call("HSET", wkey, "failed", id, "error", err)
  workflow_ended(ctx, wkey, "failed")
  local why = "cancelled: workflow member " .. id .. " (" .. ttype .. ") failed: " .. err
  local on_error = redis.call("HGET", wkey, "on_error") or ""
  for _, m in ipairs(cjson.decode(redis.call("HGET", wkey, "members") or "[]")) do
    local mid = m[1]
    local mkey = ctx.prefix .. mid
    -- The failed member itself is skipped: a waiting one being deleted is still "waiting" in its hash here.
    if mid ~= on_error and mid ~= id and redis.call("HGET", mkey, "state") == "waiting" then
      cancel_waiting(ctx, mkey, mid, why)
    end
  end
  if on_error ~= "" then
    local ekey = ctx.prefix .. on_error
    if redis.call("HGET", ekey, "state") == "waiting" then
      release_waiting(ctx, ekey, on_error, redis.call("HGET", ekey, "type") or "", "failure",
        cjson.encode({task = id, type = ttype, error = err}))
    end
  end
end

after_failure = function(ctx, key, id, err, status)
  local f = redis.call("HMGET", key, "wf", "role", "type")
  if f[1] then
    local wkey = queue_key(ctx, "wf:" .. f[1])
    -- A member cancelled because a dependency outside its workflow failed fails its workflow too.
    if record_member(wkey, id, status, nil) and f[2] == "member" and redis.call("HGET", wkey, "state") == "running" then
      workflow_failed(ctx, wkey, id, f[3] or "", err)
    end
  end
  local dependents = take_dependents(ctx, id)
  if #dependents == 0 then return end
  for _, dep in ipairs(dependents) do
    local dep_key = ctx.prefix .. dep
    if redis.call("HGET", dep_key, "state") == "waiting" then
      cancel_waiting(ctx, dep_key, dep, "dependency " .. id .. " failed: " .. err)
    end
  end
end

-- A workflow member that has not started (waiting, pending, scheduled or retry) is archived by an operator's
-- workflow action, with why as its error: its workflow records status for it, and its dependents are archived
-- as when it fails (after_failure). structures maps the states it may be in to their keys.
local function archive_unstarted(ctx, key, id, state, structures, archived, why, status)
  if state == "waiting" then
    cancel_waiting(ctx, key, id, why)  -- records "cancelled"
    return
  end
  local ttype = redis.call("HGET", key, "type") or ""
  remove_from(structures[state], state, id)
  release_unique(key, id)
  redis.call("ZADD", archived, ctx.now, id)
  redis.call("HSET", key, "error", why, "failed_at", ctx.now)
  moved(ctx, key, id, ttype, state, "archived", why)
  after_failure(ctx, key, id, why, status)
end

-- The members of a workflow, from its record: {id, type, role, after} each, in submit order (dependencies first).
local function workflow_members(wkey)
  return cjson.decode(redis.call("HGET", wkey, "members") or "[]")
end

-- == Records of deleted tasks (see records.py) =====================================================================
-- An operator's action on a task (edit_task.lua, run_task.lua) makes the audit log name it, so the task is marked to
-- be remembered: its hash gets keep (how long, in ms, its record outlives it) and trail (JSON array, oldest first,
-- at most TRAIL_KEPT entries: the failure the task carried when the operator acted, then the action). A task no one
-- acted on carries neither field and pays nothing here. When a marked task is deleted on success (done.lua), or by
-- the janitor once its retention ends (delete_expired.lua), it leaves queue_key "rec:<id>" (keys.py
-- QueueKeys.task_record): JSON of its type, creation, retries, trail and end, expiring keep ms later. So its page
-- stays readable after the hash and (in a busy queue) its events are gone.
local TRAIL_KEPT = 20

local function trail_of(raw)
  if not raw then return {} end
  local ok, trail = pcall(cjson.decode, raw)
  if ok and type(trail) == "table" then return trail end
  return {}
end

-- The failure a task's hash carries (its latest: error, failed_at, ran_ms) onto the trail, unless it is there.
-- ended_in: where the failure sent the task (retry or archived).
local function trail_failure(trail, err, failed_at, ran, ended_in)
  local at = tonumber(failed_at)
  if not at then return end
  for _, entry in ipairs(trail) do
    if entry.kind == "failed" and entry.at == at then return end
  end
  trail[#trail + 1] = {kind = "failed", at = at, error = err or "", ran_ms = tonumber(ran), to = ended_in}
end

local function mark_kept(ctx, key, action, keep_ms)
  local keep = tonumber(keep_ms)
  if not keep or keep <= 0 then return end
  local f = redis.call("HMGET", key, "trail", "error", "failed_at", "ran_ms", "state")
  local trail = trail_of(f[1])
  trail_failure(trail, f[2], f[3], f[4], f[5] == "archived" and "archived" or "retry")
  trail[#trail + 1] = {kind = action, at = ctx.now, by = ctx.actor}
  while #trail > TRAIL_KEPT do table.remove(trail, 1) end
  redis.call("HSET", key, "keep", keep, "trail", cjson.encode(trail))
end

-- Call before the task's hash is deleted; keep is its keep field. outcome: "done" (deleted on success) or
-- "expired" (its retention ended after it completed). A failure since the last action (an automatic retry) joins
-- the trail: it sent the task to retry, or the task could not have succeeded without another operator action.
local function leave_record(ctx, key, id, ttype, keep, outcome)
  local f = redis.call("HMGET", key, "trail", "error", "failed_at", "retried", "msg", "completed_at", "ran_ms")
  local trail = trail_of(f[1])
  trail_failure(trail, f[2], f[3], nil, "retry")
  local ok, msg = pcall(cjson.decode, f[5] or "")
  local record = {type = ttype, outcome = outcome, at = ctx.now, by = ctx.actor, retried = tonumber(f[4]) or 0,
    created = ok and type(msg) == "table" and tonumber(msg.created) or nil, trail = trail}
  if outcome == "done" then
    record.started, record.ran_ms = tonumber(ctx.started), tonumber(ran_ms(ctx))
  else
    record.completed_at, record.ran_ms = tonumber(f[6]), tonumber(f[7])
  end
  redis.call("SET", queue_key(ctx, "rec:" .. id), cjson.encode(record), "PX", keep)
end
