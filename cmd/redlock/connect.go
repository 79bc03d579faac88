package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// connectTimeout is how long run and hold wait at most, before their first
// attempt to take the lock, for the nodes to connect (see connect); longer
// with a --node-timeout over it.
const connectTimeout = 5 * time.Second

// openNodes opens a node of the driver drv for each address, as
// redlock.Open does, with errors of the command name; on an error it
// closes those it opened.
func openNodes(name, drv string, addrs []string) ([]driver.Node, error) {
	d, ok := commandDrivers[drv]
	if !ok {
		return nil, fmt.Errorf("%s: unknown driver %q", name, drv)
	}
	nodes := make([]driver.Node, 0, len(addrs))
	for i, addr := range addrs {
		n, err := d.Open(addr)
		if err != nil {
			closeNodes(nodes)
			return nil, fmt.Errorf("%s: address %d: %w", name, i+1, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// closeNodes closes nodes.
func closeNodes(nodes []driver.Node) {
	for _, n := range nodes {
		n.Close()
	}
}

// connect makes the nodes connect before the first attempt to take the
// lock, so that the attempt's node timeout (200ms by default) bounds the
// nodes' answers to it rather than the making of this process's
// connections too: a fresh process dials every node (TCP, TLS, AUTH,
// HELLO) within its first attempt, which on a loaded machine took longer
// than the node timeout, so that run --wait 0, with only that attempt,
// exited 69 (too many nodes failed) on nodes that were up and would have
// answered 75 or granted the lock. Each node is asked which server it is
// (driver.Identifier, which the Client asks at its first acquisition
// anyway), whatever it answers: the attempt tells the errors. connect
// returns once every node has answered or failed, once a quorum has
// answered and a node timeout more has passed (a node down or stalled does
// not hold up a lock the others can decide), once too many have failed for
// a quorum to answer, at timeout, or when ctx ends (a signal). A node that
// failed counts for no quorum: with one down, the others are still needed,
// and those slow to connect were given up on a node timeout after the
// first quorum of answers and failures, so that --wait 0's attempt failed
// on them (TestWaitZeroSlowConnectNodeDown).
func connect(ctx context.Context, nodes []driver.Node, quorum int, nodeTimeout, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	var calls sync.WaitGroup
	defer calls.Wait() // the nodes' calls end with ctx
	defer cancel()
	answered := make(chan bool, len(nodes)) // false: the node failed
	asked := 0
	for _, n := range nodes {
		id, ok := n.(driver.Identifier)
		if !ok {
			continue
		}
		asked++
		calls.Go(func() {
			// Two calls at once, as the first attempt makes (its SET
			// and the Client's own question of identity): a driver
			// with a pool of connections (goredis, redigo) usually
			// has two made then, so that neither call of the attempt
			// dials; not always (the two may not overlap).
			var both sync.WaitGroup
			var failed atomic.Bool
			for range 2 {
				both.Go(func() {
					if _, err := id.Identity(ctx); err != nil {
						failed.Store(true)
					}
				})
			}
			both.Wait()
			answered <- !failed.Load()
		})
	}
	var grace <-chan time.Time
	for got, failed := 0, 0; got+failed < asked; {
		select {
		case ok := <-answered:
			if !ok {
				if failed++; failed > len(nodes)-quorum {
					return // the attempt fails whatever the others do
				}
			} else if got++; got == quorum {
				t := time.NewTimer(nodeTimeout)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			return
		case <-ctx.Done():
			return
		}
	}
}
