// Package chaos soaks Redlock in faults it is meant to tolerate, and checks
// that no two clients ever held the lock at once.
//
// [Run] starts N independent redis-server processes on loopback ports (with
// package redistest), each behind its own fault-injecting TCP proxy, and runs
// contenders for one key through the given drivers (one redlock.Client each,
// opened on the proxies' addresses). Meanwhile a random schedule applies to
// the nodes the faults that Redlock is designed to survive, to never more than
// a minority of them at once:
//
//   - pause: SIGSTOP, then SIGCONT (requests queue up and are applied late);
//   - cut: every connection closed at once, new ones too, for a while;
//   - blackhole: connections accepted, nothing answered;
//   - latency: requests and replies delayed, by up to twice the node timeout;
//   - lose replies: requests applied, replies swallowed;
//   - kill and delayed restart: SIGKILL, down for longer than the TTL, then
//     started again empty (the delayed restart that makes a node without
//     persistence safe).
//
// Every grant is recorded as the interval in which its holder may act as the
// only owner: from the moment Lock returned to the earlier of the lock's
// validity deadline (Lock.Until, moved by successful extensions) and the moment
// Unlock was called. All grants share one process and one monotonic clock, so
// the intervals are comparable, and [Overlaps] checks every pair. Faults that
// Redlock does not tolerate (a restart without persistence before the TTL,
// clock jumps, a holder paused past its validity) are not applied here: the
// scenarios in package safety's tests show what they do.
//
// Run is the soak test of the safety module (cd safety && go test -run TestSoak .
// -soak=2m) and of its command (cd safety && go run ./cmd/chaos). The Redis
// drivers register themselves: import the ones named in Config.Drivers.
package chaos
