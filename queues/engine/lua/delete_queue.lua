-- delete queue: removes the queue's remaining keys. Refused while tasks are active, and while any task is
-- left unless forced; the caller empties big queues first with delete_all, chunk by chunk.
-- KEYS[1] pending    KEYS[2] lease set    KEYS[3] scheduled    KEYS[4] retry    KEYS[5] archived
-- KEYS[6] completed    KEYS[7..] other keys of the queue to remove (paused, counters, per-type counts, events)
-- ARGV[1] task key prefix    ARGV[2] "1" to force
-- Returns "OK"; error QUEUE_NOT_EMPTY with the counts.
local sizes = {redis.call("LLEN", KEYS[1])}
for i = 2, 6 do sizes[i] = redis.call("ZCARD", KEYS[i]) end
local total = 0
for _, n in ipairs(sizes) do total = total + n end
if sizes[2] > 0 then return redis.error_reply("QUEUE_NOT_EMPTY " .. sizes[2] .. " tasks are active") end
if total > 0 and ARGV[2] ~= "1" then
  return redis.error_reply("QUEUE_NOT_EMPTY " .. total .. " tasks left; force to delete them")
end
for _, structure in ipairs({KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]}) do
  local ids = structure == KEYS[1] and redis.call("LRANGE", structure, 0, -1) or redis.call("ZRANGE", structure, 0, -1)
  for _, id in ipairs(ids) do
    release_unique(ARGV[1] .. id, id)
    redis.call("DEL", ARGV[1] .. id)
  end
end
redis.call("DEL", unpack(KEYS))
return "OK"
