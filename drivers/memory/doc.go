// Package memory is an in-process driver.Node with an injectable clock and
// fault controls, for deterministic simulation, examples and unit tests of code
// that takes locks. It is not a Redis server and gives no protection across
// processes.
//
// It registers itself as "memory": redlock.Open("memory", addrs) opens one
// node per address, and nodes opened under the same address in one process
// share their keys, so several Clients contend as they would on real servers.
// New returns a node with keys of its own.
package memory
