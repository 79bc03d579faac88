package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// stuckConnServer is a memory node whose SETs and PEXPIREs go through one
// connection (the embedded Node, which the test stalls: they wait in its
// socket) and its releases through another (rel). The first release is
// answered; from then on, while stopped is set, the releases never reach
// the node: they wait for their context and fail, as on a server stopped
// (SIGSTOP) right after it answered. answered tells whether the first
// release came.
func stuckConnServer(node *memory.Node, stopped, answered *atomic.Bool) gatedReleases {
	gate := func(ctx context.Context) error {
		if answered.Swap(true) && stopped.Load() {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	return gatedReleases{Node: node, rel: node.Conn(), gate: gate}
}

// The release repeated once more for a node that answered "not held" but
// whose acquisition SET had failed (it may wait in the node's socket) is
// repeated as long as any failed release of the lock: up to the key's
// expiry plus the longest Extend TTL, since an Extend's PEXPIRE that failed
// on that node may wait there behind the SET. Node 4's SET and then an
// Extend's PEXPIRE (10s over a 1s TTL) wait on a stalled connection and
// fail; Unlock's release reaches the node on another connection and is
// answered "not held"; the node then stops, past the key's expiry (10s
// after the Extend began), and resumes 15s on: the SET, then the PEXPIRE,
// land, and a repeat must release the key. Before, that repeat ended at the
// key's expiry, and the key stayed on the node the PEXPIRE's 10s.
func TestUnlockRepeatsUnsureReleasePastExtendTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = 100 * time.Millisecond
		mem, _ := memNodes(5)
		stopped, answered := new(atomic.Bool), new(atomic.Bool)
		stopped.Store(true)
		x := stuckConnServer(mem[4], stopped, answered)
		nodes := []driver.Node{mem[0], mem[1], mem[2], mem[3], x}
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(time.Second))
		mem[4].SetConnStalled(true)
		start := time.Now()
		l, err := c.TryLock(t.Context(), "k") // granted by nodes 0-3; node 4's SET waits
		require.NoError(t, err)
		time.Sleep(2 * nodeTimeout) // the SET failed
		synctest.Wait()
		require.NoError(t, l.Extend(t.Context(), 10*time.Second)) // its PEXPIRE to node 4 waits behind the SET, and fails
		time.Sleep(2 * nodeTimeout)
		synctest.Wait()
		require.NoError(t, l.Unlock(t.Context())) // node 4: "not held"
		synctest.Wait()
		require.True(t, answered.Load(), "node 4 answered the first release")
		require.Equal(t, 0, holders(mem[:4], "k"), "released on the nodes that answered")

		time.Sleep(start.Add(15*time.Second + nodeTimeout/4).Sub(time.Now()))
		mem[4].SetConnStalled(false) // the SET, then the PEXPIRE: 10s from now
		pttl, held := mem[4].PTTL("k")
		require.True(t, held && pttl > 5*time.Second, "node 4 applied the SET and the PEXPIRE: PTTL %v", pttl)
		stopped.Store(false)
		time.Sleep(10 * nodeTimeout)
		synctest.Wait()
		assert.False(t, mem[4].Holds("k"), "key left on the node %v after its resume, 5s before the repeats' end (the expiry plus the Extend's TTL)", 10*nodeTimeout)
	})
}
