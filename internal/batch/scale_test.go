package batch_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/batch"
)

// answer enters g and exits it as a command answered in rtt.
func answer(t *testing.T, g *batch.Gate, rtt time.Duration) {
	t.Helper()
	require.NoError(t, g.Enter(t.Context()))
	g.Exit(0, rtt)
}

// A Gate keeps its limit until it has timed MinSamples answers, and while
// the fastest is under FarRoundTrip; then it lets in flight its limit per
// millisecond of the fastest answer, rounded up, at most MaxScale times it.
// A slower answer never raises it, a faster one lowers it.
func TestGateScaleByRoundTrip(t *testing.T) {
	g := batch.NewGate(2)
	for range batch.MinSamples - 1 {
		answer(t, g, 2500*time.Microsecond)
	}
	require.Equal(t, 2, g.Limit(), "fewer than MinSamples answers timed")
	answer(t, g, 0)
	require.Equal(t, 2, g.Limit(), "an answer not timed is no sample")
	answer(t, g, 2500*time.Microsecond)
	require.Equal(t, 6, g.Limit(), "2.5ms, rounded up: 3 times the limit")
	answer(t, g, 40*time.Millisecond)
	require.Equal(t, 6, g.Limit(), "a slower answer does not raise it")
	answer(t, g, 1500*time.Microsecond)
	require.Equal(t, 2, g.Limit(), "under FarRoundTrip: the fixed limit")
	answer(t, g, time.Hour)
	require.Equal(t, 2, g.Limit(), "the fastest answer only goes down")

	far := batch.NewGate(2)
	for range batch.MinSamples {
		answer(t, far, time.Second)
	}
	require.Equal(t, 2*batch.MaxScale, far.Limit(), "at most MaxScale times the limit")
}

// The waiters enter as soon as the limit grows; when it shrinks, the places
// of the commands that exit are freed until no more than it are in flight.
func TestGateWaitersFollowTheLimit(t *testing.T) {
	g := batch.NewGate(2)
	for range batch.MinSamples - 1 {
		answer(t, g, 2500*time.Microsecond)
	}
	ctx := t.Context()
	require.NoError(t, g.Enter(ctx))
	require.NoError(t, g.Enter(ctx))
	var wg sync.WaitGroup
	var waiters []<-chan error
	for i := range 6 { // one after the other, so that they queue in this order
		waiters = append(waiters, enterAsync(&wg, g, ctx))
		require.Eventually(t, func() bool { return g.Pending().Depth == i+1 }, 5*time.Second, time.Millisecond)
	}
	g.Exit(0, 2500*time.Microsecond) // the last sample: 6 in flight
	require.Equal(t, 6, g.Limit())
	for _, w := range waiters[:5] {
		require.NoError(t, <-w, "a waiter enters as the limit grows")
	}
	require.Equal(t, 1, g.Pending().Depth, "6 in flight: the sixth waiter still waits")
	g.Exit(0, 40*time.Millisecond)
	require.NoError(t, <-waiters[5], "the place given back goes to the last waiter")

	g.Exit(0, 500*time.Microsecond) // a near server after all: 2
	require.Equal(t, 2, g.Limit())
	for range 3 { // 5 in flight: the exits free places until 2 are
		g.Exit(0, time.Millisecond)
	}
	third := enterAsync(&wg, g, ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond,
		"with 2 of 2 in flight a newcomer waits")
	g.Exit(0, time.Millisecond)
	require.NoError(t, <-third)
	g.Exit(0, 0)
	g.Exit(0, 0)
	wg.Wait()
	require.NoError(t, g.Enter(ctx), "every place was given back")
}

// A Batcher sends at once its senders per millisecond of the server's fastest
// answer, once it timed MinSamples sends whose commands all had a reply: a
// server whose answers take 5ms gets several batches in flight; one that
// answered fast keeps one, even when later answers are slow; calls that
// failed at once (a refused connection) are no answers.
func TestBatcherScalesByRoundTrip(t *testing.T) {
	refused := errors.New("connection refused")
	// run sends samples lone calls, answered as first says, then 40 at once
	// answered in 5ms each, and returns how many batches were in flight at
	// most among those.
	run := func(t *testing.T, samples int, first func() (time.Duration, error)) int32 {
		var inFlight, seen atomic.Int32
		warm := true
		var mu sync.Mutex
		b := batch.New(func(ctx context.Context, cs []*batch.Call[int, int]) {
			n := inFlight.Add(1)
			for m := seen.Load(); n > m && !seen.CompareAndSwap(m, n); m = seen.Load() {
			}
			mu.Lock()
			d, err := 5*time.Millisecond, error(nil)
			if warm {
				d, err = first()
			}
			mu.Unlock()
			time.Sleep(d)
			for _, c := range cs {
				c.Res, c.Err = c.Cmd, err
			}
			inFlight.Add(-1)
		}, 1, 1)
		for range samples {
			b.Do(t.Context(), 0)
		}
		mu.Lock()
		warm = false
		mu.Unlock()
		seen.Store(0)
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
		return seen.Load()
	}
	slow := func() (time.Duration, error) { return 5 * time.Millisecond, nil }
	require.Greater(t, run(t, batch.MinSamples, slow), int32(1), "answers of 5ms: more than one batch at once")
	require.Equal(t, int32(1), run(t, batch.MinSamples, func() (time.Duration, error) { return 0, nil }),
		"fast answers: one batch at once, however slow the later ones")
	require.Greater(t, run(t, batch.MinSamples, func() (time.Duration, error) { return 0, refused }), int32(1),
		"calls refused at once are not answers: the 5ms answers that follow are the first samples")
}
