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

// slowSetServer is a memory node whose SETs and PEXPIREs reach it a while
// after they were sent (arrive), and whose releases, while stopped is set,
// wait: until the node resumes (resumed closed), which then applies them,
// or until their context ends, as a server stopped (SIGSTOP) does with the
// commands on a live connection.
type slowSetServer struct {
	gatedReleases
	arrive time.Duration
}

// newSlowSetServer returns node as a slowSetServer; a nil stopped never
// stops it.
func newSlowSetServer(node *memory.Node, arrive time.Duration, stopped *atomic.Bool, resumed <-chan struct{}) slowSetServer {
	gate := func(ctx context.Context) error {
		if stopped == nil || !stopped.Load() {
			return nil
		}
		select {
		case <-resumed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return slowSetServer{gatedReleases: gatedReleases{Node: node, gate: gate}, arrive: arrive}
}

func (n slowSetServer) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	time.Sleep(n.arrive)
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n slowSetServer) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	time.Sleep(n.arrive)
	return n.Node.Extend(ctx, key, value, ttl)
}

// A failed release is repeated as long as the key may live on its node: a
// Redis key lives a TTL from its SET's arrival, after the acquisition's
// start, and through its last millisecond. The SETs arrive 15ms after they
// are sent (the TTL is 1s, the node timeout 20ms); node 2 stops before
// Unlock and resumes 2ms after the key's expiry counted from the start,
// 14ms before its own: its release, repeated, must then remove it. Before,
// the repeats ended at the expiry counted from the start, and the key
// stayed there 14ms more. The same after an Extend (2s), whose PEXPIREs
// arrive as late, from its own start.
func TestUnlockRepeatsReleaseUntilKeyEnd(t *testing.T) {
	t.Run("acquired", func(t *testing.T) { testUnlockRepeatsReleaseUntilKeyEnd(t, 0) })
	t.Run("extended", func(t *testing.T) { testUnlockRepeatsReleaseUntilKeyEnd(t, 2*time.Second) })
}

func testUnlockRepeatsReleaseUntilKeyEnd(t *testing.T, extend time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		const (
			nodeTimeout = 20 * time.Millisecond
			arrive      = 15 * time.Millisecond
			ttl         = time.Second
		)
		mem, _ := memNodes(3)
		stopped, resumed := new(atomic.Bool), make(chan struct{})
		x := newSlowSetServer(mem[2], arrive, stopped, resumed)
		nodes := []driver.Node{newSlowSetServer(mem[0], arrive, nil, nil), newSlowSetServer(mem[1], arrive, nil, nil), x}
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(ttl))
		synctest.Wait()
		start := time.Now()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait() // every SET answered
		require.Equal(t, 3, holders(mem, "k"))
		end := start.Add(ttl)
		if extend > 0 {
			time.Sleep(100 * time.Millisecond)
			end = time.Now().Add(extend)
			require.NoError(t, l.Extend(t.Context(), extend))
			synctest.Wait() // every PEXPIRE answered
		}
		stopped.Store(true)
		err = l.Unlock(t.Context()) // node 2's release fails at the node timeout; a quorum released
		require.NoError(t, err)
		synctest.Wait()
		require.True(t, mem[2].Holds("k"))

		time.Sleep(end.Add(2 * time.Millisecond).Sub(time.Now()))
		require.True(t, mem[2].Holds("k"), "the key lives a TTL from its SET's or PEXPIRE's arrival")
		close(resumed)
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		assert.False(t, mem[2].Holds("k"), "key left on the node after its resume, before its TTL from the SET's or PEXPIRE's arrival ran out")
	})
}

// queuedSlowSetServer is a slowSetServer that says it queues
// (driver.Queuer), as the nodes of every Redis driver do: a call's context
// then ends at the end of its wait in the queue that Unlock gives it.
type queuedSlowSetServer struct{ slowSetServer }

func (queuedSlowSetServer) Pending() driver.Pending { return driver.Pending{} }

// Unlock's release calls wait in a queuing node's queue as long as the key
// may live there: a TTL from its SET's or PEXPIRE's arrival, plus Redis's
// last millisecond, not only from the acquisition's (or the Extend's)
// start. The SETs (or an Extend's PEXPIREs) reach the nodes 300ms after
// they were sent (TTL 1s, node timeout 20ms); Unlock runs 10ms before the
// expiry counted from the start, and its releases wait in the queue until
// 30ms past it, while the key still lives 270ms more on every node. Before,
// the calls' queue wait ended at that expiry plus the node timeout: every
// release was dropped 10ms before it could go, Unlock said the lock was not
// released, and the key outlived the release.
func TestUnlockReleaseWaitsUntilKeyEnd(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		name := map[int]string{1: "lone", 3: "three"}[nodes]
		t.Run(name+"/acquired", func(t *testing.T) { testUnlockReleaseWaitsUntilKeyEnd(t, nodes, 0) })
		t.Run(name+"/extended", func(t *testing.T) { testUnlockReleaseWaitsUntilKeyEnd(t, nodes, 2*time.Second) })
	}
}

func testUnlockReleaseWaitsUntilKeyEnd(t *testing.T, n int, extend time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		const (
			nodeTimeout = 20 * time.Millisecond
			arrive      = 300 * time.Millisecond
			ttl         = time.Second
		)
		mem, _ := memNodes(n)
		stopped, resumed := new(atomic.Bool), make(chan struct{})
		nodes := make([]driver.Node, n)
		for i := range nodes {
			nodes[i] = queuedSlowSetServer{newSlowSetServer(mem[i], arrive, stopped, resumed)}
		}
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(ttl))
		synctest.Wait()
		start := time.Now()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, n, holders(mem, "k"))
		expiry := start.Add(ttl) // counted from the start, as the old bound was
		if extend > 0 {
			time.Sleep(100 * time.Millisecond)
			expiry = time.Now().Add(extend)
			require.NoError(t, l.Extend(t.Context(), extend))
			synctest.Wait()
		}
		stopped.Store(true) // the releases wait in the queue
		time.Sleep(expiry.Add(-10 * time.Millisecond).Sub(time.Now()))
		done := make(chan error, 1)
		go func() { done <- l.Unlock(t.Context()) }()
		time.Sleep(expiry.Add(nodeTimeout + 10*time.Millisecond).Sub(time.Now()))
		synctest.Wait()
		require.Equal(t, n, holders(mem, "k"), "the key lives a TTL from its SET's or PEXPIRE's arrival")
		close(resumed) // the releases leave the queue
		err = <-done
		assert.NoError(t, err, "Unlock gave up on releases that could still reach a key living on the nodes")
		synctest.Wait() // the release beyond the quorum, from the background
		assert.Zero(t, holders(mem, "k"), "key left on the nodes once Unlock's releases returned")
	})
}
