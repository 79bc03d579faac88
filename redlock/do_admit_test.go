package redlock_test

import (
	"context"
	"fmt"
	"runtime"
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

// The goroutine that holds a lock through Do keeps the smallest stack a
// goroutine has: Do's acquisition runs on the Client's workers, not on it
// (the runtime would not shrink its stack again while fn runs). Measured
// as the stack memory of many Do's holding their lock, against as many
// goroutines parked on a channel; a Do that acquired on its own goroutine
// costs 4 KB or more. The race detector's frames are larger: skipped there.
func TestDoStackStaysSmall(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's frames are larger")
	}
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes)
		const n = 2000
		stacks := func() int64 {
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return int64(m.StackInuse)
		}
		release := make(chan struct{})
		var wg sync.WaitGroup
		before := stacks()
		for range n {
			wg.Go(func() { <-release })
		}
		synctest.Wait()
		parked := (stacks() - before) / n
		close(release)
		wg.Wait()

		var held atomic.Int32
		allHeld := make(chan struct{})
		release = make(chan struct{})
		before = stacks()
		for i := range n {
			wg.Go(func() {
				_ = c.Do(t.Context(), fmt.Sprint("stack", i), func(ctx context.Context) error {
					if held.Add(1) == n {
						close(allHeld)
					}
					<-release
					return nil
				})
			})
		}
		<-allHeld
		// Idle workers exit after a few seconds (synctest's clock), before
		// the locks' first extension.
		time.Sleep(2500 * time.Millisecond)
		perLock := (stacks() - before) / n
		close(release)
		wg.Wait()
		t.Logf("stack per held lock %d B, per parked goroutine %d B", perLock, parked)
		// A few grow in the allocator's slow path (about 2.4–3 KB on
		// average); all of them did before (5.2–5.5 KB).
		require.Less(t, perLock, 2*parked, "the stacks of the goroutines holding a lock through Do grew")
	})
}
