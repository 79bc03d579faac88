// Package bench is the benchmark suite that every driver runs identically, in
// the way package conformance is the test suite that every driver passes.
//
// A [Contender] is one lock implementation: a redlock driver ([Driver]), a bare
// Redis client doing the same round trips without lock logic ([Floors]), or a
// peer library (the package bench/peers). The cases are exported functions that
// take a Contender and run sub-benchmarks named by their parameters:
//
//	Lock     lock+unlock, each locker on a key of its own: nodes=1,3,5 × lockers=1,64
//	Lone     lock+unlock by one caller, a driver and its client's floor in turn: nodes=1,3
//	Extend   Extend on a held lock: nodes=1,5 × lockers=64
//	Handoff  one key, held 10ms each time: release → the next waiter holds it;
//	         4 clients × 1 locker, 2 clients × 1 (one waiter), 8 clients × 4
//	HandoffFloor  the one-waiter hand-off, a driver and its client's waiting floor in turn: nodes=1,5
//	Idle     one PING by a bare client after an idle time, the machine's cost of waking (not in the runner)
//	Stalled  lock+unlock on five nodes of which two are stalled (SIGSTOP)
//	Far      lock+unlock on five nodes of which two are 40ms away (round trip), and
//	         through the same proxy without delay
//	Scale    N locks held at once through Do by one client, over three extension periods
//	ScaleFar Scale with two of the five nodes 40ms away, behind Far's proxy (not in the runner)
//
// BenchmarkHandoffSteps, in the package's tests (not in the runner), runs Handoff
// with an Observer on every Client and logs where the hand-offs' time went:
// attempts, split votes, the holder's release replies, the winner's wake and
// its SET grants (run it with -v).
//
// The floors ([Floors]) do a driver's commands by hand with the bare client:
// SET NX PX, then the drivers' release script (driver.ReleaseNotifyScript, which
// also publishes the release) by EVALSHA; [DelFloors] release by DEL;
// [WaitingFloors] wait for the key as a Redlock waiter must, for the least
// such a waiter can do by hand (the floor of a hand-off).
//
// The repository's benchmarks put the contender's name above the parameters,
// so that one case of one driver runs alone (from the bench module's folder):
//
//	go test -run '^$' -bench 'Lock/rueidis/nodes=5/lockers=64' .
//	go test -run '^$' -bench 'Floor/rueidis/nodes=5' .      # its client's floor
//	go test -run '^$' -bench 'Lock/rueidis/nodes=5/lockers=64' -cpuprofile cpu.out -memprofile mem.out .
//
// Besides ns/op (and B/op, allocs/op with -benchmem, which every case reports),
// every case reports ops/s and the p50 and p99 latency of one operation in
// nanoseconds (p50-ns, p99-ns); for Handoff these are the hand-off latencies,
// from the start of the holder's Unlock to the return of the next holder's Lock.
// An operation that failed counts as failed/op, and a case fails when more than
// a tenth did; in Handoff and HandoffFloor, an Unlock whose release only
// outlived the node timeout (no quorum refused it) counts as slow-unlocks/op
// instead, and fails the case when more than a tenth and more than one did.
//
// The servers are redis-server processes on loopback ports, started by
// [Servers] with package redistest, or taken from the environment variable
// named by [AddrsEnv], as the runner (cd bench && go run ./cmd/benchrun) sets
// it to share five servers between its runs. Figures are never asserted: the tests only check
// that every benchmark runs ([CheckBenchmarks]).
package bench
