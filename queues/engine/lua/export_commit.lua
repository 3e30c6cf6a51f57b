-- exporter commit: record that every event of the stream up to and including an id is stored for good, which
-- also lets scripts trim the stream up to it. Offsets only move forward: an exporter that lost its lease and
-- commits late can never move one back (and so re-expose or re-export events).
-- KEYS[1] offset hash of the queue's stream (<events>:exporter)
-- ARGV[1] stream id of the last stored event
-- Returns "OK"; error PRECONDITION when the queue has no exporter attached, or the id is behind the committed one.
local current = redis.call("HGET", KEYS[1], "committed")
if not current then return redis.error_reply("PRECONDITION no exporter attached") end
local function parts(id)
  local ms, seq = string.match(id, "^(%d+)-(%d+)$")
  return tonumber(ms), tonumber(seq)
end
local cms, cseq = parts(current)
local nms, nseq = parts(ARGV[1])
if not nms then return redis.error_reply("PRECONDITION malformed stream id " .. ARGV[1]) end
if nms < cms or (nms == cms and nseq < cseq) then
  return redis.error_reply("PRECONDITION offset " .. ARGV[1] .. " is behind " .. current)
end
redis.call("HSET", KEYS[1], "committed", ARGV[1])
return "OK"
