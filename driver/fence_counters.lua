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

-- decimal returns s without leading zeros if it is a decimal number of 64
-- bits (at most 2^64-1: tokens are uint64), and nil otherwise (a GET's false
-- for a missing key, an error table of redis.pcall, any other text).
local function decimal(s)
	if type(s) ~= "string" or not string.find(s, "^%d+$") then
		return nil
	end
	s = number(s)
	if larger(s, "18446744073709551615") then
		return nil
	end
	return s
end

-- notNumber begins the error reply of a script whose counter in use holds
-- something else than a decimal number of 64 bits (by hand, or a lock named
-- as the counter): the script writes nothing then, and the drivers take the
-- reply for one retrying cannot fix (driver.PermanentCode).
local notNumber = "ERR fencing counter holds no number: "

-- inUse returns the counter in use at name, a decimal string without
-- leading zeros ("0" when there is none), or nil when it holds anything else
-- (see notNumber).
local function inUse(name)
	local s = redis.call("GET", name)
	if not s then
		return "0"
	end
	return decimal(s)
end

-- withOld returns the largest of counter (a decimal string without leading
-- zeros) and the counters of earlier versions named by ARGV[3] and on
-- (driver.OldFenceKeys), read as far as the user may (redis.pcall: an ACL
-- refusal, or a key another node of a cluster serves, counts as absent) and
-- only when they hold a decimal number of 64 bits. One above 2^64-1, which
-- no version wrote (tokens are uint64), counts as none.
local function withOld(counter)
	for i = 3, #ARGV do
		local old = decimal(redis.pcall("GET", ARGV[i]))
		if old and larger(old, counter) then
			counter = old
		end
	end
	return counter
end
