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
package memory
