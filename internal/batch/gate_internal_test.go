package batch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A waiter that abandoned its place but had not yet taken itself out of the
// count when the last command in flight exited leaves nothing in flight: a
// newcomer that then finds it counted queues, and enters at once rather than
// waiting for an exit that will not come (found by an outside review: the
// newcomer waited out its deadline).
func TestGateNewcomerBehindAbandonedWaiter(t *testing.T) {
	g := NewGate(1)
	// The state the race leaves: nothing in flight, one waiter in the
	// queue, abandoned but still counted in depth.
	gone := &waiter{ready: make(chan error, 1)}
	gone.state.Store(abandoned)
	g.normal.push(gone)
	g.depth = 1
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, g.Enter(ctx), "the newcomer enters the free place")
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Equal(t, 1, g.inFlight)
}

// The waiters enter as soon as the limit grows; when it shrinks, the places
// of the commands that exit are freed until no more than it are in flight.
func TestGateWaitersFollowTheLimit(t *testing.T) {
	g := NewGate(2)
	// MinSamples-1 round trips of 2.5ms, long ago.
	past := time.Now().Add(-time.Hour)
	for i := range MinSamples - 1 {
		sent := past.Add(time.Duration(i) * time.Second)
		g.rtt.learn(sent, sent.Add(2500*time.Microsecond), MaxScale)
	}
	ctx := t.Context()
	require.NoError(t, g.Enter(ctx))
	require.NoError(t, g.Enter(ctx))
	var wg sync.WaitGroup
	var waiters []chan error
	for i := range 6 { // one after the other, so that they queue in this order
		c := make(chan error, 1)
		wg.Go(func() { c <- g.Enter(ctx) })
		waiters = append(waiters, c)
		require.Eventually(t, func() bool { return g.Pending().Depth == i+1 }, 5*time.Second, time.Millisecond)
	}
	g.Exit(0, time.Now().Add(-2500*time.Microsecond)) // the last sample: 2×3 in flight
	require.Equal(t, 6, g.Limit())
	for _, w := range waiters[:5] {
		require.NoError(t, <-w, "a waiter enters as the limit grows")
	}
	require.Equal(t, 1, g.Pending().Depth, "6 in flight: the sixth waiter still waits")
	g.Exit(0, time.Now().Add(-40*time.Millisecond))
	require.NoError(t, <-waiters[5], "the place given back goes to the last waiter")

	g.Exit(0, time.Now().Add(-500*time.Microsecond)) // a near server after all: 2
	require.Equal(t, 2, g.Limit())
	for range 3 { // 5 in flight: the exits free places until 2 are
		g.Exit(0, time.Time{})
	}
	third := make(chan error, 1)
	wg.Go(func() { third <- g.Enter(ctx) })
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond,
		"with 2 of 2 in flight a newcomer waits")
	g.Exit(0, time.Time{})
	require.NoError(t, <-third)
	g.Exit(0, time.Time{})
	g.Exit(0, time.Time{})
	wg.Wait()
	require.NoError(t, g.Enter(ctx), "every place was given back")
}

// roundTrip counts round trips one after the other, learns the fastest of
// all answers, and scales from FarRoundTrip up, rounding up, at most most.
func TestRoundTripLearn(t *testing.T) {
	var r roundTrip
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for i := range MinSamples - 1 {
		require.Equal(t, 1, r.learn(at(float64(10*i)), at(float64(10*i)+4.2), 16))
	}
	require.Equal(t, 1, r.learn(at(63), at(67.5), 16), "sent before the last counted answer: not a round trip of its own")
	require.Equal(t, MinSamples-1, r.samples)
	require.Equal(t, 5, r.learn(at(100), at(104.2), 16), "4.2ms rounded up")
	require.Equal(t, 5, r.learn(at(200), at(300), 16), "slower: no change")
	require.Equal(t, 3, r.learn(at(400), at(402.5), 16), "faster: lower")
	require.Equal(t, 3, r.learn(time.Time{}, at(500), 16), "no sample")
	require.False(t, r.near.Load())
	require.False(t, r.start().IsZero(), "a far server's commands are timed")
	require.Equal(t, 1, r.learn(at(600), at(601), 16), "under FarRoundTrip")
	require.True(t, r.near.Load(), "near for good")
	require.True(t, r.start().IsZero(), "a near server's commands are not timed: nothing to learn")

	var far roundTrip
	for i := range MinSamples {
		far.learn(at(float64(1000*i)), at(float64(1000*i+500)), 16)
	}
	require.Equal(t, 16, far.learn(time.Time{}, at(1e5), 16), "at most most")
}
