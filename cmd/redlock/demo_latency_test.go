//go:build unix

package main

import (
	"context"
	"testing"
	"time"

	_ "github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The demo's per-node table counted as a node's errors the calls cut by the
// end of its contention part, whose context ends by its deadline
// (context.WithTimeout), not by a cancel as the table's filter assumed: on
// healthy local servers every node showed errors, one per driver, "SET NX:
// context deadline exceeded" (found by an outside check: the demo's
// per-node latency table, gathered by the observation point, is meant to
// show the nodes). A call cut by its caller's end is not the node's error; a node
// slower than the node timeout is.
func TestDemoLatencyErrors(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 3)
	stalled := servers[0]
	count := func(key string, ctxTimeout, nodeTimeout time.Duration) int {
		lat := newNodeLatencies()
		c, err := redlock.Open("goredis", redistest.Addrs(servers), redlock.WithObserver(lat),
			redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Connected while every node answers: no question of which server
		// a node is goes to the stalled one later.
		if err := c.Connect(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := stalled.Pause(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := stalled.Resume(); err != nil {
				t.Error(err)
			}
		}()
		ctx, cancel := context.WithTimeout(t.Context(), ctxTimeout)
		defer cancel()
		if _, err := c.TryLock(ctx, key); err != nil {
			t.Fatal(err) // two of three nodes answer
		}
		// Close waits for the stalled node's SET, which the caller's
		// deadline or the node timeout ends.
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		lat.mu.Lock()
		defer lat.mu.Unlock()
		return lat.errs[stalled.Addr()]
	}
	// The caller's context ends first (as the demo's part does): not an
	// error of the node.
	if n := count("demo-latency-1", 300*time.Millisecond, 5*time.Second); n != 0 {
		t.Errorf("a call cut by its caller's deadline counted as %d error(s) of the node, want 0", n)
	}
	// The node timeout ends the call: the node's error.
	if n := count("demo-latency-2", 10*time.Second, 100*time.Millisecond); n != 1 {
		t.Errorf("a node that did not answer within the node timeout counted %d error(s), want 1", n)
	}
}
