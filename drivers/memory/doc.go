// Package memory is an in-process driver.Node with an injectable clock and
// fault controls, for deterministic simulation, examples and unit tests of code
// that takes locks. It is not a Redis server and gives no protection across
// processes. Keys expire as in Redis: by the node's clock in whole
// milliseconds, a key set (or extended) with a TTL of d staying until the
// millisecond d after the current one has passed, as Redis 7 keeps a key
// with PX 100 set at t at t+100ms and drops it after.
//
// New returns a node with keys of its own, and Node.Conn another connection
// to a node's keys. In a test, make the nodes with New and give each Client
// its own Conns of them (a Client closes its nodes): the Clients then contend
// as processes would, and the keys are the test's, so every run starts with
// none (go test -count) and tests running in parallel share none.
//
// It registers itself as "memory": redlock.Open("memory", addrs) opens one
// node per address, and nodes opened under the same address in one process
// share their keys and fault controls for as long as the process lasts: a key
// a test left held, or a node it left down, is still so when the test runs
// again under -count. Tests that open addresses must therefore clean up after
// themselves and use addresses of their own (with t.Name() in them, say)
// when they run in parallel or in different testing/synctest bubbles: two
// bubbles that contend on one address would send to each other's goroutines,
// which synctest forbids (the binary dies with "send on synctest channel from
// outside bubble"), and a key left by a test on the real clock looks held for
// years inside a bubble, whose clock starts in 2000.
//
// # Testing code that takes locks
//
// The fault controls stand for what a test of code that holds a lock must
// survive. All but SetConnDown and SetConnStalled act on a node's store,
// so on every Conn of it:
//
//   - Delete drops a key as an eviction, an early expiry or a restart without
//     persistence does; Forget drops every key and fencing counter. To make a
//     held lock lost, Delete its key on every node: a lock is granted once a
//     quorum set the key, and the SET of a node that had not answered by then
//     may land after the test deleted the key on a bare quorum, which then
//     still holds the lock.
//   - SetDown makes a node fail every call (ErrDown, in a *redlock.NodeError),
//     as a crashed or unreachable server; down on so many nodes that no quorum
//     is left (two of three), a lock held through Client.Do is lost when its
//     validity ends, its extensions failing until then (ErrDown says
//     nothing of the key, so they are retried: fn's context is canceled,
//     its cause redlock.ErrLockLost), and acquisitions fail with an error
//     that matches redlock.ErrNotObtained and redlock.ErrUnavailable.
//   - SetStalled holds the calls, as a server stopped with SIGSTOP or behind a
//     partition: its callers wait until the node timeout. SetLatency delays each
//     call, as a slow network (on the RealClock, in a synctest bubble if
//     virtual; on a FakeClock each call's delay advances the clock in
//     turn, so the delays of concurrent calls add up: see SetLatency). SetLoseReplies applies the calls and loses their
//     replies.
//   - SetConnDown and SetConnStalled act on one Conn only, as a partition
//     between one client and the server: the store keeps its keys and its
//     other Conns still reach them. Through a Conn that is down, calls fail
//     at once with ErrDown, unapplied (a connection refused or reset);
//     through a stalled one, they wait until their context ends (a Client's
//     node timeout) and are applied when the Conn resumes, as TCP delivers
//     what it retransmitted once a partition heals. A subscription made
//     through a cut Conn receives no release while it is cut. So a test
//     can cut one Client from two of three nodes while another Client still
//     reaches all three: the cut Client's extensions fail without any node
//     saying the key is gone, so a lock it holds through Client.Do is lost
//     when its validity ends (fn's context is canceled, its cause
//     redlock.ErrLockLost), and the other Client gets the lock only once the
//     keys left on the nodes the cut Client cannot reach have expired, a TTL
//     after they were last set or extended. (Let the grant's last SET land
//     first, with synctest.Wait: a grant needs only a quorum.)
//   - PTTL, Holds and Fence read a node's state without a call.
//   - A FakeClock (WithClock) moves the nodes' time only, as a clock jump on
//     the servers does: the Client measures validity and waits by the
//     process's clock, so advancing a FakeClock past a TTL expires the key
//     on the nodes while the Client still counts its lock valid.
//
// Releases through a node (Lock.Unlock, the end of Client.Do) notify the
// subscribers of the key, as the Redis drivers' pub/sub does, so a waiting
// Client.Lock tries again at once rather than after its backoff; a key that
// expires or is deleted notifies nobody, as in Redis. As with those drivers,
// a subscription survives an outage (SetDown, Forget, SetConnDown): it
// hears nothing meanwhile and gets one notice once the node is back, since
// a release may have been published while it could not hear, so that a
// waiter tries again then rather than after its backoff.
//
// In a testing/synctest bubble the Client and nodes run on the bubble's
// clock (the default RealClock), so a TTL of minutes costs nothing, and Do's
// extensions and a key's expiry happen at exact virtual times. Make the
// nodes and the Client inside the bubble and Close the Client before the
// bubble's function returns (defer, or t.Cleanup): the Client's goroutines
// wait on timers, and the bubble's time stops when its function returns, so
// a Client left open fails the test with "deadlock: main bubble goroutine
// has exited but blocked goroutines remain". Close ends them all.
// Conversely, while a Do holds a lock its extensions keep the bubble's time
// moving: a fn that waits for something that never comes never deadlocks,
// and the test runs until go test's timeout. Bound such waits with a
// context.WithTimeout or time.After (virtual time: it costs nothing).
// synctest.Wait lets every call in flight land first (the late SETs above
// among them), except those that SetLatency delays or SetStalled holds. The
// README's "Testing code that takes locks" is a whole test file that does
// this, run by the repository's tests.
package memory
