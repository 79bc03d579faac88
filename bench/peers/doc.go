// Package peers adapts other Go lock libraries to the benchmark suite in
// package bench, so that they run the same cases as the redlock drivers, on the
// same servers, in the same runs (cd bench && go run ./cmd/benchrun):
//
//	redsync-goredis, redsync-redigo, redsync-rueidis
//	        github.com/go-redsync/redsync/v4 over each client (Redlock over N nodes)
//	redislock
//	        github.com/bsm/redislock over go-redis (one node)
//	rueidislock
//	        github.com/redis/rueidis/rueidislock (one node)
//
// It is a package of the bench module, which is a module of its own, so that
// the library's go.mod never requires them.
// Every peer runs with its defaults, except for the settings that make the
// comparison like for like: the lock TTL (bench.TTL), the bare clients of
// package bench (the same as the floors'), a retry policy for bsm/redislock,
// which has none by default, and the details given with each constructor.
//
//	cd bench/peers && go test -run '^$' -bench 'Lock/redsync-rueidis/nodes=5' .
package peers
