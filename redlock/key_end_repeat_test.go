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

// slowSetServer is a memory node whose SETs and PEXPIREs reach it a while after they
// were sent (arrive), and whose releases, while stopped is open, wait:
// until the node resumes (resumed closed), which then applies them, or
// until their context ends, as a server stopped (SIGSTOP) does with the
// commands on a live connection.
type slowSetServer struct {
	*memory.Node
	arrive  time.Duration
	stopped *atomic.Bool // nil: never
	resumed chan struct{}
}

func (n slowSetServer) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	time.Sleep(n.arrive)
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n slowSetServer) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	time.Sleep(n.arrive)
	return n.Node.Extend(ctx, key, value, ttl)
}

func (n slowSetServer) wait(ctx context.Context) error {
	if n.stopped == nil || !n.stopped.Load() {
		return nil
	}
	select {
	case <-n.resumed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n slowSetServer) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if err := n.wait(ctx); err != nil {
		return false, err
	}
	return n.Node.EvalRelease(ctx, key, value)
}

func (n slowSetServer) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	if err := n.wait(ctx); err != nil {
		return false, err
	}
	return n.Node.ReleaseNotify(ctx, key, value)
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
		x := slowSetServer{Node: mem[2], arrive: arrive, stopped: new(atomic.Bool), resumed: make(chan struct{})}
		nodes := []driver.Node{slowSetServer{Node: mem[0], arrive: arrive}, slowSetServer{Node: mem[1], arrive: arrive}, x}
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
		x.stopped.Store(true)
		err = l.Unlock(t.Context()) // node 2's release fails at the node timeout; a quorum released
		require.NoError(t, err)
		synctest.Wait()
		require.True(t, mem[2].Holds("k"))

		time.Sleep(end.Add(2 * time.Millisecond).Sub(time.Now()))
		require.True(t, mem[2].Holds("k"), "the key lives a TTL from its SET's or PEXPIRE's arrival")
		close(x.resumed)
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		assert.False(t, mem[2].Holds("k"), "key left on the node after its resume, before its TTL from the SET's or PEXPIRE's arrival ran out")
	})
}
