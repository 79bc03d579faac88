package batch_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

// enterAsync enters g with ctx on a goroutine of wg, and sends the result of
// Enter on the returned channel.
func enterAsync(wg *sync.WaitGroup, g *batch.Gate, ctx context.Context) <-chan error {
	c := make(chan error, 1)
	wg.Go(func() { c <- g.Enter(ctx) })
	return c
}

// No more than the limit are in flight; the others wait until one exits.
func TestGateBoundsInFlight(t *testing.T) {
	g := batch.NewGate(2)
	ctx := t.Context()
	require.NoError(t, g.Enter(ctx))
	require.NoError(t, g.Enter(ctx))
	var wg sync.WaitGroup
	third := enterAsync(&wg, g, ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond)
	select {
	case err := <-third:
		t.Fatalf("Enter with 2 of 2 in flight = %v before any exited, want it to wait", err)
	default:
	}
	g.Exit(0, time.Time{})
	require.NoError(t, <-third, "the waiter enters once one exits")
	require.Equal(t, driver.Pending{}, g.Pending())
	g.Exit(0, time.Time{})
	g.Exit(0, time.Time{})
	for range 2 {
		require.NoError(t, g.Enter(ctx), "every place was given back")
	}
	wg.Wait()
}

// Urgent commands enter before the others that wait, and Pending reports the
// queue.
func TestGateUrgentFirstAndPending(t *testing.T) {
	g := batch.NewGate(1)
	ctx := t.Context()
	require.NoError(t, g.Enter(ctx))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		order []string
	)
	enter := func(name string, ctx context.Context) {
		wg.Go(func() {
			require.NoError(t, g.Enter(ctx))
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			g.Exit(0, time.Time{})
		})
	}
	enter("normal", ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond)
	enter("urgent", driver.WithUrgent(ctx))
	require.Eventually(t, func() bool { return g.Pending().Depth == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	require.GreaterOrEqual(t, g.Pending().Oldest, 10*time.Millisecond, "the oldest waited at least since it queued")
	g.Exit(0, time.Time{})
	wg.Wait()
	require.Equal(t, []string{"urgent", "normal"}, order, "an urgent command goes before one that waited longer")
	require.Equal(t, driver.Pending{}, g.Pending())
}

// A waiter whose context ends returns its error, never enters, and leaves
// the queue.
func TestGateContextEndsWait(t *testing.T) {
	g := batch.NewGate(1)
	require.NoError(t, g.Enter(t.Context()))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, g.Enter(ctx), context.DeadlineExceeded)
	require.Equal(t, driver.Pending{}, g.Pending(), "an abandoned waiter leaves the queue")
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, g.Enter(canceled), context.Canceled, "a context already done does not enter")
	g.Exit(0, time.Time{})
	require.NoError(t, g.Enter(t.Context()), "the place is free again: the abandoned waiter did not take it")
}

// A command that times out on the network when the server has answered
// nothing for twice that timeout fails the waiters, as a Batcher does; a
// server that answered recently keeps them.
func TestGateTimeoutFailsQueue(t *testing.T) {
	const (
		slow    = 5 * time.Second       // the server answered within twice that
		stalled = 20 * time.Millisecond // it answered nothing for more than twice that
	)
	g := batch.NewGate(1)
	ctx := t.Context()
	require.NoError(t, g.Enter(ctx))
	g.Exit(0, time.Time{}) // answered just now
	require.NoError(t, g.Enter(ctx))
	var wg sync.WaitGroup
	waiter := enterAsync(&wg, g, ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond)
	g.Exit(slow, time.Time{}) // timed out, but the server answered within 2×slow
	require.NoError(t, <-waiter, "a slow server keeps its queue")

	time.Sleep(3 * stalled) // nothing answered since
	waiter = enterAsync(&wg, g, ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond)
	g.Exit(stalled, time.Time{})
	err := <-waiter
	require.ErrorIs(t, err, context.DeadlineExceeded, "a waiter behind a server that does not answer fails, as on a timeout")
	require.Equal(t, driver.Pending{}, g.Pending())
	require.NoError(t, g.Enter(ctx), "the failed waiter took no place")
	wg.Wait()
}

// gateStorm queues n commands behind the one in flight on g, then lets
// that one time out on the network (timeout) and returns how many of the
// queued ones failed: each that enters is answered.
func gateStorm(t *testing.T, g *batch.Gate, n int, timeout time.Duration) int {
	t.Helper()
	var failed atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := g.Enter(t.Context()); err != nil {
				failed.Add(1)
				return
			}
			g.Exit(0, time.Time{})
		})
	}
	synctest.Wait()
	require.Equal(t, n, g.Pending().Depth, "the commands wait behind the one in flight")
	g.Exit(timeout, time.Time{})
	wg.Wait()
	return int(failed.Load())
}

// The first command to a server that times out does not fail the commands
// waiting behind it: the server was asked for one network timeout, it did
// not answer nothing for twice that. Before, a Gate that had no answer yet
// counted the silence from the zero time, and failed every waiter (as a
// Batcher did: see TestFirstTimeoutKeepsQueue).
// It runs in a bubble (testing/synctest): the commands queue behind the
// first on any machine.
func TestGateFirstTimeoutKeepsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := batch.NewGate(1)
		require.NoError(t, g.Enter(t.Context()))
		time.Sleep(500 * time.Millisecond) // its network timeout
		require.Zero(t, gateStorm(t, g, 500, 500*time.Millisecond), "commands queued behind a server's first timeout failed")
	})
}

// A server that answered, then had nothing to do for long, has not been
// silent for that long when its next command times out: the waiters enter.
func TestGateTimeoutAfterIdleKeepsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := batch.NewGate(1)
		require.NoError(t, g.Enter(t.Context()))
		g.Exit(0, time.Time{}) // answered
		time.Sleep(time.Minute)
		require.NoError(t, g.Enter(t.Context()))
		time.Sleep(500 * time.Millisecond) // its network timeout
		require.Zero(t, gateStorm(t, g, 500, 500*time.Millisecond), "commands queued behind the first timeout after a quiet spell failed")
	})
}

// Under many concurrent commands, some abandoned, no more than the limit are
// ever in flight, and every place is given back.
func TestGateStress(t *testing.T) {
	const limit = 4
	g := batch.NewGate(limit)
	var (
		wg       sync.WaitGroup
		inFlight atomic.Int32
		most     atomic.Int32
	)
	for i := range 64 {
		wg.Go(func() {
			for j := range 50 {
				ctx := t.Context()
				if (i+j)%5 == 0 {
					c, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(200))*time.Microsecond)
					defer cancel()
					ctx = c
				}
				if (i+j)%3 == 0 {
					ctx = driver.WithUrgent(ctx)
				}
				if g.Enter(ctx) != nil {
					continue
				}
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				inFlight.Add(-1)
				g.Exit(0, time.Time{})
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most.Load(), int32(limit), "in flight at once")
	require.Equal(t, driver.Pending{}, g.Pending())
	for range limit {
		require.NoError(t, g.Enter(t.Context()), "every place was given back")
	}
}

// A command cut short by its caller (Exit(CutShort)) says nothing of the
// server: it neither fails the queue behind it, however long the server has
// been silent, nor counts as an answer, so that a later timeout still fails
// the queue of a server that has answered nothing since it was asked.
func TestGateCutShortIsNoAnswer(t *testing.T) {
	const stalled = 20 * time.Millisecond
	g := batch.NewGate(1)
	ctx := t.Context()
	require.NoError(t, g.Enter(ctx))
	g.Exit(0, time.Time{}) // answered
	require.NoError(t, g.Enter(ctx))
	time.Sleep(3 * stalled) // asked, and nothing answered since
	var wg sync.WaitGroup
	waiter := enterAsync(&wg, g, ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond)
	g.Exit(batch.CutShort, time.Time{}) // its caller gave up: nothing learned
	require.NoError(t, <-waiter, "a command cut short by its caller does not fail the queue")
	waiter = enterAsync(&wg, g, ctx)
	require.Eventually(t, func() bool { return g.Pending().Depth == 1 }, 5*time.Second, time.Millisecond)
	g.Exit(stalled, time.Time{})
	require.ErrorIs(t, <-waiter, context.DeadlineExceeded, "the queue behind a server that answered nothing fails")
	wg.Wait()
}
