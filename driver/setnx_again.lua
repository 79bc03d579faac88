-- A SET NX sent again, on a new connection, after the server closed or
-- reset the connection of its first send before any reply came (a restart,
-- CLIENT KILL, the server's idle timeout): the first may or may not have
-- run. SET KEYS[1] ARGV[1] NX PX ARGV[2]; if the key exists and holds
-- ARGV[1], the lock's random value, unique to the acquisition, the first
-- send set it: that counts as set too, and its time to live, set by the
-- first send, is left as it is. KEYS[2] and ARGV[3] and on, when given, are
-- the fencing counters that driver.SetNXFenceScript reads, read the same way.
-- Returns {1, counter} if the key holds ARGV[1] now, {0, counter}
-- otherwise; the counter is a decimal string, "0" when there is none.
-- A counter in use that holds no number fails it as SetNXFenceScript.
-- inUse, notNumber and withOld are fence_counters.lua's, which scripts.go
-- puts first.
local counter = "0"
if KEYS[2] then
	counter = inUse(KEYS[2])
	if not counter then
		return redis.error_reply(notNumber .. KEYS[2])
	end
end
local set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
if not set and redis.call("GET", KEYS[1]) == ARGV[1] then
	set = true
end
counter = withOld(counter)
if set then
	return {1, counter}
end
return {0, counter}
