-- Delete KEYS[1] only if it holds ARGV[1], and then publish the release on the
-- channel ARGV[2], driver.ReleaseChannel(KEYS[1]), with SPUBLISH (sharded
-- pub/sub, Redis 7), so that waiters retry at once. The publication is
-- protected: where SPUBLISH is missing or refused, the release still succeeds
-- and waiters poll. Returns 1 if deleted, 0 otherwise.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	pcall(redis.call, "SPUBLISH", ARGV[2], "")
	return 1
end
return 0
