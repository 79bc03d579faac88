-- SET KEYS[1] ARGV[1] NX PX ARGV[2], and read the fencing counter KEYS[2] in
-- the same atomic step. ARGV[3] and on, when given, are the counters of
-- earlier versions (driver.OldFenceKeys), read as far as the user may
-- (redis.pcall: an ACL refusal, or a key another node of a cluster serves,
-- counts as absent) and only when they hold a decimal number of 64 bits,
-- leading zeros aside (a number written by hand as "007" is 7); the largest
-- counter is returned. Returns {1, counter} if the key was set, {0, counter}
-- otherwise; the counter is a decimal string, "0" when there is none.
local set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
local counter = redis.call("GET", KEYS[2]) or "0"
-- Without leading zeros (a counter written by hand as "007" is 7).
counter = string.gsub(counter, "^0+(%d)", "%1")
for i = 3, #ARGV do
	local old = redis.pcall("GET", ARGV[i])
	if type(old) == "string" and string.find(old, "^%d+$") then
		-- Compare as digit strings (Lua numbers lose precision above
		-- 2^53), without leading zeros: the longer is then the larger.
		-- One above 2^64-1, which no version wrote (tokens are uint64),
		-- counts as none.
		old = string.gsub(old, "^0+(%d)", "%1")
		if (#old < 20 or (#old == 20 and old <= "18446744073709551615")) and
			(#old > #counter or (#old == #counter and old > counter)) then
			counter = old
		end
	end
end
if set then
	return {1, counter}
end
return {0, counter}
