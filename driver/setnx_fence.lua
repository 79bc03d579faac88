-- SET KEYS[1] ARGV[1] NX PX ARGV[2], and read the fencing counter KEYS[2] in
-- the same atomic step; KEYS[3], when given, is the counter of an earlier
-- version of the storage format (driver.LegacyFenceKey), read too, and the
-- larger of the two is returned. Returns {1, counter} if the key was set,
-- {0, counter} otherwise; the counter is a decimal string, "0" when there is
-- none.
local set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
local counter = redis.call("GET", KEYS[2]) or "0"
if KEYS[3] then
	local old = redis.call("GET", KEYS[3])
	-- Compare as digit strings: Lua numbers lose precision above 2^53.
	if old and (#old > #counter or (#old == #counter and old > counter)) then
		counter = old
	end
end
if set then
	return {1, counter}
end
return {0, counter}
