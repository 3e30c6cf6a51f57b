-- exporter attach: from now on the queue's event stream is trimmed by MINID at the exporter's committed id
-- (see trimming() in _lib.lua) with a hard length cap. Keeps an existing committed id; a new one starts at 0-0,
-- so nothing already in the stream is trimmed before the exporter has stored it.
-- KEYS[1] offset hash of the queue's stream (<events>:exporter)
-- ARGV[1] hard cap on the stream's length (entries; 0 = none)
-- Returns the committed id.
redis.call("HSETNX", KEYS[1], "committed", "0-0")
redis.call("HSET", KEYS[1], "cap", ARGV[1])
return redis.call("HGET", KEYS[1], "committed")
