-- fire_tick: a scheduler enqueues the task of one periodic entry for one tick, exactly once however many
-- schedulers try. The entry's last handled tick lives in the queue's slot, so checking it, enqueuing and moving
-- it happen in one step: a scheduler killed before this script changed nothing, one killed after it left the tick
-- handled, and a late twin is refused even when the task has long finished and been deleted.
-- KEYS[1] per-type counts    KEYS[2] event stream    KEYS[3] pending    KEYS[4] scheduled
-- KEYS[5] last tick per entry (hash)    KEYS[6] the entry's history (sorted set by tick)
-- KEYS[7] paused entries (hash)
-- ARGV[1] task key prefix    ARGV[2] now (ms)    ARGV[3] event stream max length    ARGV[4] actor
-- ARGV[5] entry id    ARGV[6] tick (ms)    ARGV[7] history cap
-- ARGV[8] history record when enqueued    ARGV[9] history record when the unique lock was held
-- ARGV[10..16] the task: id, type, options (msg), payload, process at (ms), unique key ("" = none),
--              unique lock ttl (ms)
-- ARGV[17] "tick" (a scheduler firing a due tick) or "manual" (an operator's run now: outside the schedule, so
--          the last handled tick is neither checked nor moved, and a paused entry runs too; the tick is now)
-- Returns "OK" (enqueued), "NEW" (enqueued, and the queue had no event stream yet: the caller lists it),
-- "DUPLICATE" (the unique lock of an earlier run is held: the tick is handled without a task) or "EXISTS" (a task
-- with this tick's id is already there: the tick is marked handled) or "PAUSED" (an operator paused the entry: the
-- tick is marked handled without a task or a history record, so a resumed entry does not catch up on the ticks of
-- its pause). Error "CONFLICT <detail>" when this tick or a later one was handled already; nothing is written then.
local ctx = new_context(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local entry, tick, cap = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local scheduled = ARGV[17] ~= "manual"
if scheduled then
  local last = redis.call("HGET", KEYS[5], entry)
  if last and tonumber(last) >= tick then
    return redis.error_reply("CONFLICT tick " .. ARGV[6] .. " of entry " .. entry .. " was handled already")
  end
end

local function handled(record)
  if scheduled then redis.call("HSET", KEYS[5], entry, ARGV[6]) end
  if record then
    redis.call("ZADD", KEYS[6], tick, record)
    redis.call("ZREMRANGEBYRANK", KEYS[6], 0, -(cap + 1))
  end
end

if scheduled and redis.call("HEXISTS", KEYS[7], entry) == 1 then
  handled(nil)
  return "PAUSED"
end

local id, ttype, ukey = ARGV[10], ARGV[11], ARGV[15]
local key = ctx.prefix .. id
if redis.call("EXISTS", key) == 1 then
  handled(nil)
  return "EXISTS"
end
if ukey ~= "" and redis.call("EXISTS", ukey) == 1 then
  handled(ARGV[9])
  return "DUPLICATE"
end

local new_queue = redis.call("EXISTS", KEYS[2]) == 0
local fields = {"type", ttype, "msg", ARGV[12], "payload", ARGV[13]}
if ukey ~= "" then
  redis.call("SET", ukey, id, "PX", ARGV[16])
  fields[#fields + 1] = "unique"
  fields[#fields + 1] = ukey
end
local at = tonumber(ARGV[14])
if at > ctx.now then
  redis.call("ZADD", KEYS[4], at, id)
  moved(ctx, key, id, ttype, "", "scheduled", nil, nil, fields)
else
  push_pending(KEYS[3], {id})
  moved(ctx, key, id, ttype, "", "pending", nil, nil, fields)
end
handled(ARGV[8])
finish(ctx)
if new_queue then return "NEW" end
return "OK"
