-- SET KEYS[1] ARGV[1] NX PX ARGV[2], and read the fencing counter KEYS[2] in
-- the same atomic step. Returns {1, counter} if the key was set, {0, counter}
-- otherwise; the counter is a decimal string, "0" when there is none.
local set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
local counter = redis.call("GET", KEYS[2]) or "0"
if set then
	return {1, counter}
end
return {0, counter}
