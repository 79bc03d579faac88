-- If KEYS[1] holds ARGV[1], raise the fencing counter KEYS[2] to ARGV[2], a
-- decimal string, and never lower it. The counter never expires. Returns 1 if
-- KEYS[1] held ARGV[1], 0 otherwise.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
-- inUse, notNumber and larger are fence_counters.lua's, which scripts.go
-- puts first: a counter written by hand as "007" is 7, and one that holds no
-- number fails the script, as SetNXFenceScript.
local counter = inUse(KEYS[2])
if not counter then
	return redis.error_reply(notNumber .. KEYS[2])
end
if larger(ARGV[2], counter) then
	redis.call("SET", KEYS[2], ARGV[2])
end
return 1
