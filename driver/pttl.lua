-- Return the remaining time to live of KEYS[1] in milliseconds (PTTL) only if
-- it holds ARGV[1]; -2 otherwise, as PTTL answers for a missing key.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PTTL", KEYS[1])
end
return -2
