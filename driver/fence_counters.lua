-- The reading of fencing counters that driver.SetNXFenceScript,
-- driver.SetNXAgainScript and driver.RaiseFenceScript share: scripts.go puts
-- this before each of them.

-- number returns s, a decimal string, without leading zeros (a counter
-- written by hand as "007" is 7).
local function number(s)
	return (string.gsub(s, "^0+(%d)", "%1"))
end

-- larger reports whether a is larger than b, both decimal strings without
-- leading zeros, compared as digit strings (Lua numbers lose precision above
-- 2^53): the longer is the larger.
local function larger(a, b)
	return #a > #b or (#a == #b and a > b)
end

-- withOld returns the largest of counter (a decimal string without leading
-- zeros) and the counters of earlier versions named by ARGV[3] and on
-- (driver.OldFenceKeys), read as far as the user may (redis.pcall: an ACL
-- refusal, or a key another node of a cluster serves, counts as absent) and
-- only when they hold a decimal number of 64 bits. One above 2^64-1, which
-- no version wrote (tokens are uint64), counts as none.
local function withOld(counter)
	for i = 3, #ARGV do
		local old = redis.pcall("GET", ARGV[i])
		if type(old) == "string" and string.find(old, "^%d+$") then
			old = number(old)
			if not larger(old, "18446744073709551615") and larger(old, counter) then
				counter = old
			end
		end
	end
	return counter
end

