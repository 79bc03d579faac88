-- Set the time to live of KEYS[1] to ARGV[2] milliseconds only if it holds
-- ARGV[1]. Returns 1 if extended, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
