-- If KEYS[1] holds ARGV[1], raise the fencing counter KEYS[2] to ARGV[2], a
-- decimal string, and never lower it. The counter never expires. Returns 1 if
-- KEYS[1] held ARGV[1], 0 otherwise.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local counter = redis.call("GET", KEYS[2])
-- Compare as digit strings (Lua numbers lose precision above 2^53), without
-- leading zeros (a counter written by hand as "007" is 7): the longer is
-- then the larger.
if counter then
	counter = string.gsub(counter, "^0+(%d)", "%1")
end
if not counter or #counter < #ARGV[2] or (#counter == #ARGV[2] and counter < ARGV[2]) then
	redis.call("SET", KEYS[2], ARGV[2])
end
return 1
