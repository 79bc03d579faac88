-- Delete KEYS[1] only if it holds ARGV[1], and then publish the release on the
-- channel ARGV[2], driver.ReleaseChannel(KEYS[1]), so that waiters retry at
-- once. Returns 1 if deleted, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", ARGV[2], "")
	return 1
end
return 0
