package batch_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/batch"
)

// The scale tests run in a bubble (testing/synctest): a round trip is then
// the time the test gives it, exactly, not what a loaded machine adds to it
// (FarRoundTrip is 2ms: an answer "at once" that a busy scheduler delayed
// 2ms looked far). In the bubble time moves only when the test sleeps, so
// the test sleeps a microsecond after an answer, for the next command to be
// sent after it (one after the other), and a near answer takes near, not 0
// (an answer of 0 is no sample).

// near is the round trip of a near server's answers in the bubble.
const near = 100 * time.Microsecond

// answer enters g and exits it as a command answered after d, one after the
// other.
func answer(t *testing.T, g *batch.Gate, d time.Duration) {
	t.Helper()
	require.NoError(t, g.Enter(t.Context()))
	sent := time.Now()
	time.Sleep(d)
	g.Exit(0, sent)
	time.Sleep(time.Microsecond)
}

// A Gate keeps its limit until it has timed MinSamples round trips one after
// the other, and while the fastest is under FarRoundTrip; then it lets in
// flight more, by the fastest answer, at most MaxScale times the limit. A
// slower answer never raises it, a faster one lowers it, and replies that
// came together count once.
func TestGateScaleByRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := batch.NewGate(2)
		for range batch.MinSamples - 1 {
			answer(t, g, 3*time.Millisecond)
		}
		require.Equal(t, 2, g.Limit(), "fewer than MinSamples round trips timed")
		require.NoError(t, g.Enter(t.Context()))
		g.Exit(0, time.Time{})
		require.Equal(t, 2, g.Limit(), "an answer not timed is no sample")
		answer(t, g, 3*time.Millisecond)
		scaled := g.Limit()
		require.Greater(t, scaled, 2, "3ms: more than the limit")
		answer(t, g, 40*time.Millisecond)
		require.Equal(t, scaled, g.Limit(), "a slower answer does not raise it")
		answer(t, g, near)
		require.Equal(t, 2, g.Limit(), "under FarRoundTrip: the fixed limit")
		answer(t, g, 10*time.Millisecond)
		require.Equal(t, 2, g.Limit(), "the fastest answer only goes down")

		far := batch.NewGate(2)
		for range batch.MinSamples {
			answer(t, far, 20*time.Millisecond)
		}
		require.Equal(t, 2*batch.MaxScale, far.Limit(), "at most MaxScale times the limit")

		wave := batch.NewGate(2)
		var sents []time.Time
		for range 2 * batch.MinSamples { // entered together: one round trip
			sents = append(sents, time.Now())
		}
		time.Sleep(5 * time.Millisecond)
		for _, s := range sents {
			wave.Exit(0, s)
		}
		require.Equal(t, 2, wave.Limit(), "replies that came together count as one round trip")

		lane := batch.NewGate(2)
		for range batch.MinSamples {
			sent := time.Now()
			time.Sleep(3 * time.Millisecond)
			lane.Learn(sent)
			time.Sleep(time.Microsecond)
		}
		require.Greater(t, lane.Limit(), 2, "replies on a connection of its own count too")
	})
}

// A Batcher sends at once more batches for a server whose answers take 5ms,
// once it timed MinSamples sends one after the other whose commands all had
// a reply; one that answered fast keeps one, even when later answers are
// slow; calls that failed at once (a refused connection) are no answers.
func TestBatcherScalesByRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
				time.Sleep(time.Microsecond)
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
		require.Equal(t, int32(1), run(t, batch.MinSamples, func() (time.Duration, error) { return near, nil }),
			"fast answers: one batch at once, however slow the later ones")
		require.Greater(t, run(t, batch.MinSamples, func() (time.Duration, error) { return near, refused }), int32(1),
			"calls refused at once are not answers: the 5ms answers that follow are the first samples")
	})
}
