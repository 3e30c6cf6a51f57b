-- enqueue: new tasks -> pending, or -> scheduled when their process time is in the future. With a unique key
-- the task also takes its unique lock (SET NX semantics). All-or-nothing for the batch: every precondition is
-- checked before anything is written, so a refused call changes nothing (but for the barrier, KEYS[5]).
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] scheduled
-- KEYS[5] (optional) the barrier of an enqueue_many whose calls are sent without waiting for each other's replies:
--         a refused call sets it (for a minute), and a call that finds it set is refused too, so nothing sent
--         behind a refused call is written. Setting it is the one write a refusal makes.
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] "1" when the client made every id of the call (128 random bits: none can exist or repeat), so they are
--         not looked up; "0" when a caller named one, and then every id is checked
-- ARGV[6..] 7 values per task: id, type, options (msg), payload, process at (ms), unique key ("" = none),
--           unique lock ttl (ms)
-- Returns "OK", or "NEW" when the queue had no event stream yet (it is new, or was deleted): the caller then
-- adds it to the global queue set, which lives in another Cluster slot. A refused task is a reply too, not an
-- error: {"CONFLICT", i} when task i's id exists, {"DUPLICATE", i} when its unique lock is held (i counts from 1).
-- Error: "PRECONDITION barred" when the barrier is set.
local barrier = KEYS[5]
if barrier and redis.call("EXISTS", barrier) == 1 then
  return redis.error_reply("PRECONDITION barred: an earlier call of the same enqueue_many was refused")
end
local function refused(code, i)
  if barrier then redis.call("SET", barrier, "1", "PX", 60000) end
  return {code, i}
end
local WIDTH, FIRST = 7, 6
-- The common call, one plain task (an id the client made, no unique key, due now, no barrier), on a queue without an
-- exporter: the same writes as the general path below, made without its tables (ids, locks, pending, fields, the
-- tally), whose Lua work costs more than the commands. Anything else, or an exporter found, takes the general path.
-- (The EXISTS is exists_noting_exporter's: the stream named twice counts 2, the exporter's offset hash 1.)
local present
if #ARGV == FIRST + WIDTH - 1 and not barrier and ARGV[5] == "1" and ARGV[FIRST + 5] == ""
    and tonumber(ARGV[FIRST + 4]) <= tonumber(ARGV[2]) then
  local events = KEYS[2]
  present = redis.call("EXISTS", events, events, events .. ":exporter")
  if present % 2 == 0 then
    local id, ttype, at, actor = ARGV[FIRST], ARGV[FIRST + 1], ARGV[2], ARGV[4]
    redis.call("HSET", ARGV[1] .. id, "state", "pending", "since", at, "type", ttype, "msg", ARGV[FIRST + 2], "payload",
      ARGV[FIRST + 3])
    if actor == "" then
      redis.call("XADD", events, "MAXLEN", "~", ARGV[3], "*", "id", id, "type", ttype, "from", "", "to", "pending",
        "at", at)
    else
      redis.call("XADD", events, "MAXLEN", "~", ARGV[3], "*", "id", id, "type", ttype, "from", "", "to", "pending",
        "at", at, "worker", actor)
    end
    if redis.call("LPUSH", KEYS[3], id) == 1 then redis.call("PUBLISH", KEYS[3], "") end
    redis.call("HINCRBY", KEYS[1], "pending:" .. ttype, 1)
    if present < 2 then return "NEW" end
    return "OK"
  end
end
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local n = (#ARGV - FIRST + 1) / WIDTH
local check_ids = ARGV[5] ~= "1"
local ids, locks = {}, {}
for i = 0, n - 1 do
  local a = FIRST + i * WIDTH
  local id, ukey = ARGV[a], ARGV[a + 5]
  if check_ids then
    if ids[id] or redis.call("EXISTS", ctx.prefix .. id) == 1 then
      return refused("CONFLICT", i + 1)
    end
    ids[id] = true
  end
  if ukey ~= "" then
    if locks[ukey] or redis.call("EXISTS", ukey) == 1 then return refused("DUPLICATE", i + 1) end
    locks[ukey] = true
  end
end
local new_queue
if present then new_queue = present < 2 else new_queue = not exists_noting_exporter(ctx, KEYS[2]) end
local pending = {}
for i = 0, n - 1 do
  local a = FIRST + i * WIDTH
  local id, ttype, ukey = ARGV[a], ARGV[a + 1], ARGV[a + 5]
  local fields = {"type", ttype, "msg", ARGV[a + 2], "payload", ARGV[a + 3]}
  if ukey ~= "" then
    redis.call("SET", ukey, id, "PX", ARGV[a + 6])
    fields[#fields + 1] = "unique"
    fields[#fields + 1] = ukey
  end
  local at = tonumber(ARGV[a + 4])
  if at > ctx.now then
    redis.call("ZADD", KEYS[4], at, id)
    moved(ctx, ctx.prefix .. id, id, ttype, "", "scheduled", nil, nil, fields)
  else
    pending[#pending + 1] = id
    moved(ctx, ctx.prefix .. id, id, ttype, "", "pending", nil, nil, fields)
  end
end
push_pending(KEYS[3], pending)
finish(ctx)
if new_queue then return "NEW" end
return "OK"
