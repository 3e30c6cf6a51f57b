-- exporter lease: one exporter at a time across all workers. Takes the lease when it is free, extends it when
-- the caller holds it, and (ttl 0) releases it when the caller holds it.
-- KEYS[1] exporter lease (string: holder id, with a TTL)
-- ARGV[1] holder id    ARGV[2] lease length (ms); "0" releases
-- Returns 1 when the caller holds the lease afterwards (or released it), 0 when another holder has it.
local holder = redis.call("GET", KEYS[1])
if ARGV[2] == "0" then
  if holder == ARGV[1] then redis.call("DEL", KEYS[1]) return 1 end
  return 0
end
if holder and holder ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1
