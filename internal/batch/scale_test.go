package batch_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/batch"
)

// A Gate lets in flight its limit per millisecond of the node's fastest
// answer so far, rounded up, between the limit and MaxScale times it; a
// slower answer never raises it, a faster one lowers it, and the waiters
// enter as soon as the limit grows.
func TestGateScalesByRoundTrip(t *testing.T) {
	g := batch.NewGate(2)
	require.Equal(t, 2, g.Limit(), "before any answer")
	ctx := t.Context()
	require.NoError(t, g.Enter(ctx))
	require.NoError(t, g.Enter(ctx))
	var wg sync.WaitGroup
	var waiters []<-chan error
	for i := range 6 { // one after the other, so that they queue in this order
		waiters = append(waiters, enterAsync(&wg, g, ctx))
		require.Eventually(t, func() bool { return g.Pending().Depth == i+1 }, 5*time.Second, time.Millisecond)
	}

	g.Exit(0, 2500*time.Microsecond) // 3ms rounded up: 6 in flight
	require.Equal(t, 6, g.Limit())
	for _, w := range waiters[:5] {
		require.NoError(t, <-w, "a waiter enters as the limit grows")
	}
	require.Equal(t, 1, g.Pending().Depth, "6 in flight: the sixth waiter still waits")

	g.Exit(0, 40*time.Millisecond) // slower: no change
	require.Equal(t, 6, g.Limit(), "a slower answer does not raise the limit")
	require.NoError(t, <-waiters[5], "the place given back goes to the last waiter")

	g.Exit(0, 500*time.Microsecond) // faster: back to 2 per ms, 1ms
	require.Equal(t, 2, g.Limit(), "a faster answer lowers it")
	// 5 in flight, limit 2: the exits free places until 2 are in flight.
	for range 3 {
		g.Exit(0, time.Millisecond)
	}
	third := enterAsync(&wg, g, ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond,
		"with 2 of 2 in flight a newcomer waits")
	g.Exit(0, time.Millisecond)
	require.NoError(t, <-third)
	wg.Wait()

	far := batch.NewGate(2)
	require.NoError(t, far.Enter(ctx))
	far.Exit(0, time.Second)
	require.Equal(t, 2*batch.MaxScale, far.Limit(), "at most MaxScale times the limit")
}

// A Batcher sends at once its senders per millisecond of the server's fastest
// answer: one whose answers take 5ms keeps several batches in flight; one
// that answered fast once keeps one, even when later answers are slow.
func TestBatcherScalesByRoundTrip(t *testing.T) {
	run := func(t *testing.T, first time.Duration) (most int32) {
		var inFlight, calls atomic.Int32
		b := batch.New(func(ctx context.Context, cs []*batch.Call[int, int]) {
			n := inFlight.Add(1)
			for {
				m := atomic.LoadInt32(&most)
				if n <= m || atomic.CompareAndSwapInt32(&most, m, n) {
					break
				}
			}
			d := 5 * time.Millisecond
			if calls.Add(1) == 1 {
				d = first
			}
			time.Sleep(d)
			for _, c := range cs {
				c.Res = c.Cmd
			}
			inFlight.Add(-1)
		}, 1, 1)
		_, err := b.Do(t.Context(), 0) // learns the round trip
		require.NoError(t, err)
		atomic.StoreInt32(&most, 0)
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				r, err := b.Do(t.Context(), i)
				require.NoError(t, err)
				require.Equal(t, i, r)
			})
		}
		wg.Wait()
		require.Equal(t, 0, b.Pending().Depth)
		return atomic.LoadInt32(&most)
	}
	require.Greater(t, run(t, 5*time.Millisecond), int32(1), "answers of 5ms: more than one batch at once")
	require.Equal(t, int32(1), run(t, 0), "a fast first answer: one batch at once, however slow the later ones")
}
