// Package memory is an in-process driver.Node with an injectable clock and
// fault controls, for deterministic simulation, examples and unit tests of code
// that takes locks. It is not a Redis server and gives no protection across
// processes. Keys expire as in Redis: by the node's clock in whole
// milliseconds, a key set (or extended) with a TTL of d staying until the
// millisecond d after the current one has passed, as Redis 7 keeps a key
// with PX 100 set at t at t+100ms and drops it after.
//
// It registers itself as "memory": redlock.Open("memory", addrs) opens one
// node per address, and nodes opened under the same address in one process
// share their keys, so several Clients contend as they would on real servers.
// New returns a node with keys of its own.
//
// Because the keys of an address are shared by the whole test binary, tests
// that run in parallel, or in different testing/synctest bubbles, must open
// addresses of their own (with t.Name() in them, say), or use New: two bubbles
// that contend on one address would send to each other's goroutines, which
// synctest forbids (the binary dies with "send on synctest channel from
// outside bubble"), and a key left by a test on the real clock looks held for
// years inside a bubble, whose clock starts in 2000.
package memory
