package redlock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Regression tests for the defects an outside review found, on in-process nodes; the
// ones about what reaches Redis are in harden_redis_test.go.

// driftOf is the drift allowance of a TTL at the default drift factor.
func driftOf(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*redlock.DefaultDriftFactor) + 2*time.Millisecond
}

// Defect 14: a nil *Lock, as TryLock returns with an error, must not panic.
func TestNilLock(t *testing.T) {
	var l *redlock.Lock
	require.NotPanics(t, func() {
		assert.Error(t, l.Unlock(t.Context()), "Unlock of a nil Lock")
		assert.Error(t, l.Extend(t.Context(), time.Second), "Extend of a nil Lock")
		assert.True(t, isClosed(l.Done()), "a nil Lock's Done is closed")
		assert.True(t, l.Until().IsZero())
		assert.Empty(t, l.Key())
		assert.Zero(t, l.Token())
	})
}

// Defect 9: Done first called after Until is already closed, as ctx.Done()
// is after its deadline.
func TestDoneAfterUntilIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(time.Second))
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		time.Sleep(time.Until(l.Until()) + time.Millisecond)
		assert.True(t, isClosed(l.Done()), "Done called after Until must return a closed channel")
	})
}

// Defect 3: once Until has passed or Done is closed, the lock is over: Extend
// fails with ErrLockLost, closes Done and never moves Until; Unlock still
// releases on the nodes.
func TestExtendAfterValidity(t *testing.T) {
	const ttl = time.Second
	for _, watched := range []bool{true, false} {
		name := map[bool]string{true: "Done closed", false: "Done not called"}[watched]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes := memNodes(3)
				c, err := redlock.New(nodes, redlock.WithTTL(ttl))
				require.NoError(t, err)
				defer c.Close()
				l, err := c.TryLock(t.Context(), "k")
				require.NoError(t, err)
				synctest.Wait()
				var done <-chan struct{}
				if watched {
					done = l.Done()
				}
				// Past Until, and still within the drift allowance: the
				// keys are still on the nodes.
				time.Sleep(time.Until(l.Until()) + time.Millisecond)
				if watched {
					require.True(t, isClosed(done))
				}
				until := l.Until()
				require.Equal(t, 3, holders(mem, "k"))
				pttl, _ := mem[0].PTTL("k")

				err = l.Extend(t.Context(), time.Minute)
				require.ErrorIs(t, err, redlock.ErrLockLost, "Extend after Until")
				assert.Equal(t, until, l.Until(), "Extend after Until must not move Until")
				assert.True(t, isClosed(l.Done()), "Extend after Until closes Done")
				after, _ := mem[0].PTTL("k")
				assert.LessOrEqual(t, after, pttl, "Extend after Until must not extend the key on the nodes")
				require.ErrorIs(t, l.Extend(t.Context(), time.Minute), redlock.ErrLockLost, "and stays over")

				require.NoError(t, l.Unlock(t.Context()), "Unlock still releases: a quorum held the key")
				synctest.Wait()
				assert.Equal(t, 0, holders(mem, "k"), "Unlock released on every node")
			})
		})
	}
}

// Defect 2, as the review reproduced it with no fault at all: an Extend to a
// shorter TTL fails for lack of validity, but the nodes applied it; Until
// must not promise the old validity. In a bubble (testing/synctest): the
// calls' 200ms node timeout is on the bubble's clock, which a machine that
// stalls the test does not move (on the real clock such a stall failed the
// TryLock or the rival's).
func TestFailedExtendLowersUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := memory.NewFakeClock(t0)
		mem, nodes := memNodes(5, memory.WithClock(clock))
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		redlock.SetClock(c, clock.Now)
		rival := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		redlock.SetClock(rival, clock.Now)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 5, holders(mem, "k"))
		for _, m := range mem {
			m.SetLatency(100 * time.Millisecond) // each call advances the fake clock
		}
		start := clock.Now()
		const short = 150 * time.Millisecond
		err = l.Extend(t.Context(), short)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorContains(t, err, "no validity left")
		assert.False(t, l.Until().After(start.Add(short-driftOf(short))),
			"Until %v after a failed Extend that the nodes applied: want at most start + %v - drift", l.Until().Sub(start), short)
		assert.True(t, isClosed(l.Done()), "the lock's validity is over")

		clock.Advance(time.Second)
		for _, m := range mem {
			m.SetLatency(0)
		}
		rl, err := rival.TryLock(t.Context(), "k")
		require.NoError(t, err, "the nodes expired the key at the shorter TTL")
		assert.False(t, l.Until().After(clock.Now()), "Until is %v ahead while a rival holds the lock", l.Until().Sub(clock.Now()))
		require.NoError(t, rl.Unlock(t.Context()))
	})
}

// slowLong applies an Extend at once but answers late when its TTL is long,
// so that a long Extend is applied on the nodes before a short one and
// answers after it.
type slowLong struct {
	*memory.Node
	long, delay time.Duration
}

func (n slowLong) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := n.Node.Extend(ctx, key, value, ttl)
	if ttl == n.long {
		time.Sleep(n.delay)
	}
	return ok, err
}

// Defect 2 with concurrent Extends of different TTLs: whichever answers last,
// Until must not pass start + ttl - drift of any of them.
func TestConcurrentExtendsKeepShortest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			long  = 10 * time.Second
			short = 150 * time.Millisecond
		)
		mem, _ := memNodes(5)
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = slowLong{Node: m, long: long, delay: 20 * time.Millisecond}
		}
		c, err := redlock.New(nodes, redlock.WithTTL(time.Second))
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)

		var wg sync.WaitGroup
		var shortStart time.Time
		wg.Go(func() { assert.NoError(t, l.Extend(t.Context(), long)) }) // applied now, answers at 20ms
		wg.Go(func() {
			time.Sleep(5 * time.Millisecond)
			shortStart = time.Now()
			assert.NoError(t, l.Extend(t.Context(), short)) // applied and answered at 5ms
		})
		wg.Wait()
		bound := shortStart.Add(short - driftOf(short))
		assert.False(t, l.Until().After(bound), "Until is %v past the short Extend's bound", l.Until().Sub(bound))

		time.Sleep(short) // the nodes applied the short TTL last: the key expired
		rival, err := redlock.New(nodes)
		require.NoError(t, err)
		defer rival.Close()
		rl, err := rival.TryLock(t.Context(), "k")
		require.NoError(t, err, "the key expired on the nodes at the short TTL")
		assert.False(t, l.Until().After(time.Now()), "Until is %v ahead while a rival holds the lock", time.Until(l.Until()))
		require.NoError(t, rl.Unlock(t.Context()))
	})
}

// Defect 2 with node errors: an Extend that fails on a majority may have
// been applied on the others; Until must not promise more than its TTL.
func TestExtendFailedOnNodesLowersUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second))
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		for _, m := range mem[:3] {
			m.SetDown(true)
		}
		start := time.Now()
		const short = 500 * time.Millisecond
		err = l.Extend(t.Context(), short)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, memory.ErrDown)
		bound := start.Add(short - driftOf(short))
		assert.False(t, l.Until().After(bound), "Until is %v past start + ttl - drift of a failed Extend", l.Until().Sub(bound))
		done := l.Done()
		require.False(t, isClosed(done), "not over yet: the short TTL still runs")
		time.Sleep(short)
		assert.True(t, isClosed(done), "Done closes at the lowered Until")
	})
}

// An Extend returns once a quorum answered, while its calls to slower nodes
// are still on their way; such a call may apply its shorter TTL after a later,
// longer Extend succeeded. Until must then stay within the earlier Extend's
// bound, so that no rival is granted the lock while Until says this one holds
// it. Found by the simulation (safety/, TestSimulation).
func TestStaleExtendCallKeepsUntilShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem, nodes := memNodes(5)
		rival := make([]driver.Node, len(mem))
		for i := range rival {
			rival[i] = sameStore{mem[i]}
		}
		opts := []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100 * time.Millisecond)}
		a, err := redlock.New(nodes, opts...)
		require.NoError(t, err)
		defer a.Close()
		b, err := redlock.New(rival, opts...)
		require.NoError(t, err)
		defer b.Close()
		l, err := a.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()

		mem[3].SetLatency(50 * time.Millisecond) // the short Extend lands late here
		mem[4].SetLatency(50 * time.Millisecond)
		require.NoError(t, l.Extend(ctx, 20*time.Millisecond))
		mem[3].SetLatency(0)
		mem[4].SetLatency(0)
		mem[1].SetLatency(80 * time.Millisecond)
		mem[2].SetLatency(80 * time.Millisecond)
		longStart := time.Now()
		err = l.Extend(ctx, time.Second) // granted by 0, 3, 4 at once
		mem[1].SetLatency(0)
		mem[2].SetLatency(0)
		if err == nil {
			assert.False(t, l.Until().After(longStart.Add(20*time.Millisecond)),
				"Until %v after the long Extend began, beyond the short Extend still landing", l.Until().Sub(longStart))
		}
		time.Sleep(90 * time.Millisecond)
		synctest.Wait()
		if l2, err := b.TryLock(ctx, "k"); err == nil {
			assert.False(t, time.Now().Before(l.Until()), "double grant: a rival holds the lock while Until is %v ahead", time.Until(l.Until()))
			l2.Unlock(ctx)
		}
		l.Unlock(ctx)
	})
}

// sameStore is another Client's view of a memory node: the same keys under
// another identity, so that redlock.New accepts it beside the first Client.
type sameStore struct{ *memory.Node }

// An Unlock whose releases failed (nodes down) repeats them in the background
// until the nodes answer: once they are back, the key is gone from every node
// well before its TTL, although a second Unlock sends nothing.
func TestUnlockRepeatsFailedReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		for _, m := range mem[:3] {
			m.SetDown(true)
		}
		err = l.Unlock(t.Context())
		require.ErrorIs(t, err, redlock.ErrUnavailable)
		require.ErrorIs(t, l.Unlock(t.Context()), redlock.ErrAlreadyUnlocked)
		time.Sleep(time.Second)
		for _, m := range mem[:3] {
			m.SetDown(false)
		}
		time.Sleep(time.Second) // a few node timeouts: the repeats reach them
		synctest.Wait()
		for i, m := range mem {
			assert.False(t, m.Holds("k"), "node %d still holds the key a second after it came back (TTL 10s)", i)
		}
	})
}
