package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Many more Do calls at once than the Client runs rounds (512): those
// without a slot wait in its queue, and each slot given back starts the
// next; all of them hold their lock at the same time, then release it.
func TestDoManyAtOnceThroughTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		for _, m := range mem {
			m.SetLatency(5 * time.Millisecond)
		}
		c := newClient(t, nodes)
		const n = 2000
		var (
			held    atomic.Int32
			allHeld = make(chan struct{})
			wg      sync.WaitGroup
			errs    = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				errs[i] = c.Do(t.Context(), fmt.Sprint("many", i), func(ctx context.Context) error {
					if held.Add(1) == n {
						close(allHeld)
					}
					select {
					case <-allHeld:
						return nil
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				})
			})
		}
		<-allHeld
		for i := range n {
			require.GreaterOrEqual(t, holders(mem, fmt.Sprint("many", i)), c.Quorum(), "lock %d while all are held", i)
		}
		wg.Wait()
		time.Sleep(time.Second) // the releases beyond the quorum, in the background
		for i, err := range errs {
			require.NoError(t, err, "Do %d", i)
			require.Zero(t, holders(mem, fmt.Sprint("many", i)), "lock %d after Do", i)
		}
	})
}

// A Do that waits in the queue for a slot ends when its context does, at
// once, without waiting for a slot, and fn does not run.
func TestDoQueuedEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		const nodeTimeout = time.Second
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout))
		for _, m := range mem {
			m.SetStalled(true) // every attempt holds its slot for the node timeout
		}
		var wg sync.WaitGroup
		for i := range 600 {
			wg.Go(func() { _, _ = c.TryLock(t.Context(), fmt.Sprint("stalled", i)) })
		}
		synctest.Wait()

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		ran := false
		err := c.Do(ctx, "queued", func(context.Context) error {
			ran = true
			return nil
		})
		took := time.Since(start)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.False(t, ran)
		require.Equal(t, 10*time.Millisecond, took, "the wait for a slot ends with the context (synctest's clock)")

		for _, m := range mem {
			m.SetStalled(false)
		}
		wg.Wait()
		// The slots are free again, and the queue does not hold the Do
		// that left it.
		require.NoError(t, c.Do(t.Context(), "queued", func(context.Context) error { return nil }))
	})
}

// A Do waiting for a busy key waits on its own goroutine, not on a worker
// nor with a slot: the Do calls of other keys, more than the slots, go on
// meanwhile, and it gets the key once the holder releases it.
func TestDoWaitingForAKeyHoldsNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		for _, m := range mem {
			m.SetLatency(time.Millisecond)
		}
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(10*time.Millisecond)))
		l, err := c.TryLock(t.Context(), "busy")
		require.NoError(t, err)

		const waiters = 600
		var (
			wg     sync.WaitGroup
			got    atomic.Int32
			werrs  = make([]error, waiters)
			others = make([]error, waiters)
		)
		for i := range waiters {
			wg.Go(func() {
				werrs[i] = c.Do(t.Context(), "busy", func(context.Context) error {
					got.Add(1)
					return nil
				})
			})
		}
		time.Sleep(100 * time.Millisecond) // they wait for the key
		require.Zero(t, got.Load())
		var owg sync.WaitGroup
		for i := range waiters {
			owg.Go(func() {
				others[i] = c.Do(t.Context(), fmt.Sprint("other", i), func(context.Context) error { return nil })
			})
		}
		owg.Wait()
		for i, err := range others {
			require.NoError(t, err, "Do of another key %d while %d wait for a busy one", i, waiters)
		}
		require.Zero(t, got.Load())

		require.NoError(t, l.Unlock(t.Context()))
		wg.Wait()
		for i, err := range werrs {
			require.NoError(t, err, "waiter %d", i)
		}
		require.EqualValues(t, waiters, got.Load())
	})
}
