-- SET KEYS[1] ARGV[1] NX PX ARGV[2], and read the fencing counter KEYS[2] in
-- the same atomic step. ARGV[3] and on, when given, are the counters of
-- earlier versions (driver.OldFenceKeys), read as far as the user may
-- (redis.pcall: an ACL refusal, or a key another node of a cluster serves,
-- counts as absent) and only when they hold a decimal number of 64 bits,
-- leading zeros aside (a number written by hand as "007" is 7); the largest
-- counter is returned. Returns {1, counter} if the key was set, {0, counter}
-- otherwise; the counter is a decimal string, "0" when there is none. A
-- counter in use that holds anything else fails the script before it sets
-- the key, with notNumber's reply. inUse, notNumber and withOld are
-- fence_counters.lua's, which scripts.go puts first.
local counter = inUse(KEYS[2])
if not counter then
	return redis.error_reply(notNumber .. KEYS[2])
end
local set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
counter = withOld(counter)
if set then
	return {1, counter}
end
return {0, counter}
