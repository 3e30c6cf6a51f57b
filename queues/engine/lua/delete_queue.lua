-- delete queue: removes the queue's remaining keys. Refused while tasks are active, and while any task is
-- left unless forced; the caller empties big queues first with delete_all, chunk by chunk. Tasks left count
-- those in every state, including aggregating ones (in a group or in an aggregation set being combined) and
-- ones waiting for their dependencies; forced, their hashes, the groups, the dependency sets and the workflow
-- records go too. Periodic entries' keys (cron:last, cron:history:*) are left: they belong to the entries,
-- which outlive the queue and would enqueue into it again.
-- KEYS[1] pending    KEYS[2] lease set    KEYS[3] scheduled    KEYS[4] retry    KEYS[5] archived
-- KEYS[6] completed    KEYS[7] set of group names    KEYS[8] aggregation sets    KEYS[9] waiting
-- KEYS[10] workflows    KEYS[11..] other keys of the queue to remove (paused, counters (totals and every daily
-- one still kept), per-type counts, events)
-- ARGV[1] task key prefix    ARGV[2] "1" to force
-- Returns "OK"; error QUEUE_NOT_EMPTY with the counts.
local base = string.sub(ARGV[1], 1, #ARGV[1] - 2)
local groups = {}
for _, name in ipairs(redis.call("SMEMBERS", KEYS[7])) do groups[#groups + 1] = base .. "g:" .. name end
for _, member in ipairs(redis.call("ZRANGE", KEYS[8], 0, -1)) do
  groups[#groups + 1] = base .. "agg:" .. string.match(member, "^[^:]*")
end
local sizes = {redis.call("LLEN", KEYS[1])}
for i = 2, 6 do sizes[i] = redis.call("ZCARD", KEYS[i]) end
sizes[7] = redis.call("ZCARD", KEYS[9])
for _, group in ipairs(groups) do sizes[#sizes + 1] = redis.call("ZCARD", group) end
local total = 0
for _, n in ipairs(sizes) do total = total + n end
if sizes[2] > 0 then return redis.error_reply("QUEUE_NOT_EMPTY " .. sizes[2] .. " tasks are active") end
if total > 0 and ARGV[2] ~= "1" then
  return redis.error_reply("QUEUE_NOT_EMPTY " .. total .. " tasks left; force to delete them")
end
local function delete_tasks(ids)
  for _, id in ipairs(ids) do
    release_unique(ARGV[1] .. id, id)
    redis.call("DEL", ARGV[1] .. id)
  end
end
delete_tasks(redis.call("LRANGE", KEYS[1], 0, -1))
for _, structure in ipairs({KEYS[3], KEYS[4], KEYS[5], KEYS[6]}) do
  delete_tasks(redis.call("ZRANGE", structure, 0, -1))
end
for _, group in ipairs(groups) do
  delete_tasks(redis.call("ZRANGE", group, 0, -1))
  redis.call("DEL", group)
end
-- A waiting task's dependencies are listed in its hash; each has a set of the tasks waiting for it.
for _, id in ipairs(redis.call("ZRANGE", KEYS[9], 0, -1)) do
  local after = redis.call("HGET", ARGV[1] .. id, "after")
  if after then
    for _, dep in ipairs(cjson.decode(after)) do redis.call("DEL", base .. "deps:" .. dep) end
  end
end
delete_tasks(redis.call("ZRANGE", KEYS[9], 0, -1))
for _, workflow in ipairs(redis.call("ZRANGE", KEYS[10], 0, -1)) do redis.call("DEL", base .. "wf:" .. workflow) end
redis.call("DEL", unpack(KEYS))
return "OK"
