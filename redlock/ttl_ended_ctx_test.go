package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// ttlCounting is a node whose TTL calls are counted.
type ttlCounting struct {
	driver.Node
	calls *atomic.Int64
}

func (n ttlCounting) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	n.calls.Add(1)
	return n.Node.(driver.TTLer).TTL(ctx, key, value)
}

// TestTTLWithEndedContextAsksNothing: Lock.TTL with a context that has
// ended already asks no node, leaves the lock as it was (Done open, Until
// unchanged), and returns ErrLockLost with ctx.Err() and a message that
// says it asked nothing, as Extend does with errNotSent. Before, it
// returned a *VoteError of an empty vote ("0 of 3 nodes agreed, 2 needed
// (0 refused, 0 failed)"), which reads as nodes that no longer hold the
// lock, while a quorum held it; and TTL's doc left the ended context out
// of the cases that give ErrLockLost.
func TestTTLWithEndedContextAsksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mem := memNodes(3)
		var calls atomic.Int64
		nodes := make([]driver.Node, len(mem))
		for i, n := range mem {
			nodes[i] = ttlCounting{n, &calls}
		}
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		until := l.Until()
		for _, end := range []func() (context.Context, context.CancelFunc){
			func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx, cancel
			},
			func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			},
		} {
			ctx, cancel := end()
			_, err := l.TTL(ctx)
			cancel()
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorIs(t, err, ctx.Err())
			assert.ErrorContains(t, err, "TTL asked nothing: its context had ended")
			var votes *redlock.VoteError
			assert.False(t, errors.As(err, &votes), "no vote was taken: %v", err)
		}
		assert.Zero(t, calls.Load(), "TTL calls sent with an ended context")
		assert.False(t, isClosed(l.Done()), "the lock is still held")
		assert.Equal(t, until, l.Until())
		d, err := l.TTL(t.Context())
		require.NoError(t, err)
		assert.Positive(t, d)
		require.NoError(t, l.Unlock(t.Context()))
	})
}

// TestTTLAfterUntilLoweredSaysWhy: a Lock.TTL whose answers leave validity
// (a quorum keeps the key for seconds) but which ends after the lock's
// Until, which a failed Extend of a shorter TTL had lowered, fails with
// ErrLockLost and says that the lock's validity ended during the call.
// Before, it said "no validity left: a quorum holds it for 8.962s, the call
// took 100ms, the drift allowance is 102ms", which contradicts itself.
func TestTTLAfterUntilLoweredSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait() // every SET landed
		mem[0].SetDown(true)
		mem[1].SetDown(true)
		require.ErrorIs(t, l.Extend(t.Context(), time.Second), redlock.ErrLockLost)
		mem[0].SetDown(false)
		mem[1].SetDown(false)
		until := l.Until()
		time.Sleep(time.Until(until) - 50*time.Millisecond)
		for _, m := range mem {
			m.SetLatency(100 * time.Millisecond)
		}
		_, err = l.TTL(t.Context())
		require.ErrorIs(t, err, redlock.ErrLockLost)
		assert.ErrorContains(t, err, "the lock's validity ended 50ms into this call")
		assert.NotContains(t, err.Error(), "no validity left: a quorum holds it")
		assert.True(t, isClosed(l.Done()))
		assert.Equal(t, until, l.Until(), "TTL never raises Until")
		for _, m := range mem {
			m.SetLatency(0)
		}
	})
}

// TestTTLOfLockFoundLostMeanwhileSaysOver: a Lock.TTL whose answers say a
// quorum holds the lock, judged after a concurrent Extend found it gone
// from two of three nodes (Done closed, Until still ahead), fails with
// ErrLockLost saying that the lock is over, not "no validity left: a quorum
// holds it for 10s ...".
func TestTTLOfLockFoundLostMeanwhileSaysOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lat = 40 * time.Millisecond
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		mem[0].SetLatency(lat)
		mem[1].SetLatency(lat)
		mem[2].SetLatency(3 * lat) // TTL waits for every node's answer
		ttlDone := make(chan error, 1)
		go func() {
			_, err := l.TTL(t.Context())
			ttlDone <- err
		}()
		time.Sleep(lat / 2)
		extendDone := make(chan error, 1)
		go func() { extendDone <- l.Extend(t.Context(), 10*time.Second) }()
		time.Sleep(lat/2 + lat/4) // after TTL's reads on nodes 0 and 1, before the Extend's
		for _, m := range mem {
			m.Delete("k")
		}
		require.ErrorIs(t, <-extendDone, redlock.ErrLockLost)
		require.True(t, isClosed(l.Done()), "the Extend found the lock lost")
		require.True(t, time.Now().Before(l.Until()))
		err = <-ttlDone
		require.ErrorIs(t, err, redlock.ErrLockLost)
		assert.ErrorContains(t, err, "the lock is over")
		assert.NotContains(t, err.Error(), "no validity left")
		for _, m := range mem {
			m.SetLatency(0)
		}
	})
}
