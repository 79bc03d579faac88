package redlock_test

import (
	"context"
	"errors"
	"sync"
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

// Algorithm tests on in-process nodes: deterministic faults and, where time
// matters, a fake clock. Most run in a bubble (testing/synctest), whose clock
// moves only when every goroutine in it waits: on the real clock, a machine
// that stalls the test past the default 200ms node timeout (-race beside
// other packages on a loaded CI machine) fails a live node's call, and with
// it a TryLock or an Unlock that the test needs ("1 of 5 nodes agreed ...
// context deadline exceeded").

func memNodes(n int, opts ...memory.Option) ([]*memory.Node, []driver.Node) {
	mem := make([]*memory.Node, n)
	nodes := make([]driver.Node, n)
	for i := range mem {
		mem[i] = memory.New(opts...)
		nodes[i] = mem[i]
	}
	return mem, nodes
}

// lockResult is what a Lock run by goLock returned.
type lockResult struct {
	l   *redlock.Lock
	err error
}

// goLock runs c.Lock(ctx, key) in a goroutine that ends when Lock
// returns, and sends what Lock returned on the channel, whose buffer of one
// means the goroutine never waits for a reader.
func goLock(ctx context.Context, c *redlock.Client, key string) <-chan lockResult {
	returned := make(chan lockResult, 1)
	go func() {
		l, err := c.Lock(ctx, key)
		returned <- lockResult{l, err}
	}()
	return returned
}

func newClient(t *testing.T, nodes []driver.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func holders(mem []*memory.Node, key string) int {
	n := 0
	for _, m := range mem {
		if m.Holds(key) {
			n++
		}
	}
	return n
}

func TestLockExcludesAndUnlockFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem, nodes := memNodes(5)
		c := newClient(t, nodes)
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		assert.Equal(t, "k", l.Key())
		// TryLock returns once a quorum granted; the rest land in the background.
		synctest.Wait()
		require.Equal(t, 5, holders(mem, "k"))

		_, err = c.TryLock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		assert.Equal(t, 5, holders(mem, "k"), "a failed attempt must not release another's lock")

		require.NoError(t, l.Unlock(ctx))
		synctest.Wait()
		require.Zero(t, holders(mem, "k"))
		err = l.Unlock(ctx)
		require.ErrorIs(t, err, redlock.ErrAlreadyUnlocked, "a second Unlock says the lock was released")
		assert.NotErrorIs(t, err, redlock.ErrLockLost, "a second Unlock did not lose the lock")

		l2, err := c.Lock(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, l2.Unlock(ctx))
	})
}

func TestMinorityDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem, nodes := memNodes(5)
		mem[0].SetDown(true)
		mem[4].SetDown(true)
		c := newClient(t, nodes)
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err, "3 of 5 nodes are a quorum")
		require.NoError(t, l.Extend(ctx, time.Minute))
		require.NoError(t, l.Unlock(ctx))
	})
}

func TestMajorityDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem, nodes := memNodes(5)
		for _, m := range mem[:3] {
			m.SetDown(true)
		}
		c := newClient(t, nodes)
		_, err := c.TryLock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, memory.ErrDown)
		var ne *redlock.NodeError
		require.ErrorAs(t, err, &ne)
		assert.Contains(t, ne.Addr, "memory-")
		// The live minority may answer after the outcome is decided; its keys are
		// released as soon as it does.
		synctest.Wait()
		require.Zero(t, holders(mem, "k"), "the keys set on the live minority must be released")
	})
}

func TestStalledMinorityCostsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem, nodes := memNodes(5)
		mem[1].SetStalled(true)
		mem[3].SetStalled(true)
		defer mem[1].SetStalled(false)
		defer mem[3].SetStalled(false)
		const nodeTimeout = 10 * time.Second
		c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))

		start := time.Now()
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, l.Extend(ctx, time.Minute))
		require.NoError(t, l.Unlock(ctx))
		// Waiting for a stalled node would take the whole node timeout.
		assert.Less(t, time.Since(start), nodeTimeout/4, "TryLock, Extend and Unlock must not wait for a stalled minority")
	})
}

func TestStalledMajorityFailsWithinNodeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem, nodes := memNodes(5)
		for _, m := range mem[:3] {
			m.SetStalled(true)
			defer m.SetStalled(false)
		}
		c := newClient(t, nodes, redlock.WithNodeTimeout(50*time.Millisecond))
		start := time.Now()
		_, err := c.TryLock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the stalled nodes' timeouts are the causes")
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Equal(t, 0, holders(mem, "k"))
	})
}

func TestReleaseOnAllAfterLostReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem, nodes := memNodes(5)
		for _, m := range mem[:3] {
			m.SetLoseReplies(true) // the SET is applied, its reply lost
		}
		c := newClient(t, nodes)
		_, err := c.TryLock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, memory.ErrReplyLost)
		// The releases to the lost-reply nodes are applied too (their replies are
		// lost as well); they go in the background, so wait for them.
		synctest.Wait()
		require.Zero(t, holders(mem, "k"), "a failed attempt must release on every node, also where the SET's reply was lost")
		for _, m := range mem[:3] {
			m.SetLoseReplies(false)
		}
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err, "another attempt must not wait for the TTL")
		require.NoError(t, l.Unlock(ctx))
	})
}

func TestValidityArithmetic(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		ttl         time.Duration
		driftFactor float64
		latency     time.Duration // per call, on the fake clock; calls run at once
		wantUntil   time.Duration // from t0; 0: not obtained
	}{
		{"fast", 10 * time.Second, 0.01, 0, 10*time.Second - 100*time.Millisecond - 2*time.Millisecond},
		{"slow but in time", 10 * time.Second, 0.01, time.Second, 10*time.Second - 102*time.Millisecond},
		{"larger drift", 10 * time.Second, 0.1, 0, 10*time.Second - time.Second - 2*time.Millisecond},
		{"elapsed eats the TTL", 10 * time.Second, 0.01, 4 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := memory.NewFakeClock(t0)
			mem, nodes := memNodes(5, memory.WithClock(clock))
			for _, m := range mem {
				m.SetLatency(tc.latency)
			}
			// liveNodeTimeout: the latency is on the fake clock, the
			// node timeout on the real one, where the default 200ms
			// failed a call on a machine that stalled the test that
			// long (at nice 19 beside CPU hogs).
			c := newClient(t, nodes, redlock.WithTTL(tc.ttl), redlock.WithDriftFactor(tc.driftFactor), redlock.WithNodeTimeout(liveNodeTimeout))
			redlock.SetClock(c, clock.Now)
			l, err := c.TryLock(ctx, "k")
			if tc.wantUntil == 0 {
				// 5 calls of 4s each advance the clock 12s or more before a
				// quorum is in: past the 10s TTL.
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				assert.ErrorContains(t, err, "no validity left")
				require.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, t0.Add(tc.wantUntil), l.Until(), "Until = start + ttl - (ttl*driftFactor + 2ms)")
			assert.True(t, clock.Now().Before(l.Until()))
		})
	}
}

// It runs in a bubble (testing/synctest): the calls' 100 ms node timeout
// (TTL 1s) is on the real clock, a margin a loaded machine can pass.
func TestExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := memory.NewFakeClock(t0)
		mem, nodes := memNodes(5, memory.WithClock(clock))
		c := newClient(t, nodes, redlock.WithTTL(time.Second))
		redlock.SetClock(c, clock.Now)
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 5, holders(mem, "k"))
		clock.Advance(900 * time.Millisecond)
		require.NoError(t, l.Extend(ctx, 5*time.Second))
		assert.Equal(t, t0.Add(900*time.Millisecond+5*time.Second-50*time.Millisecond-2*time.Millisecond), l.Until())
		clock.Advance(2 * time.Second) // past the first TTL, within the extension
		assert.GreaterOrEqual(t, holders(mem, "k"), 3, "a quorum holds the extended lock")

		require.Error(t, l.Extend(ctx, 0))
		require.NotErrorIs(t, l.Extend(ctx, -time.Second), redlock.ErrLockLost, "bad input is not a lost lock")

		// Lost on a majority (expired early, evicted, or a node restarted empty).
		before := l.Until()
		for _, m := range mem[:3] {
			m.Delete("k")
		}
		err = l.Extend(ctx, 5*time.Second)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		assert.Equal(t, before, l.Until(), "a failed Extend leaves Until alone")
		require.ErrorIs(t, l.Unlock(ctx), redlock.ErrLockLost)
		synctest.Wait()
		require.Zero(t, holders(mem, "k"), "Unlock releases on every node, also when the lock is lost")
	})
}

func TestContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes)

		canceled, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.TryLock(canceled, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.Canceled)

		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err = c.Lock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded, "Lock must say that its context ended")

		// Unlock releases whatever its context says.
		require.NoError(t, l.Unlock(canceled))
		require.ErrorIs(t, l.Unlock(canceled), redlock.ErrAlreadyUnlocked, "a second Unlock calls no node")

		l, err = c.TryLock(t.Context(), "k2")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 3, holders(mem, "k2"))
		for _, m := range mem {
			m.Delete("k2")
		}
		err = l.Unlock(canceled)
		require.ErrorIs(t, err, redlock.ErrLockLost, "nothing left to release")
		require.ErrorIs(t, err, context.Canceled, "the ended context is joined when no quorum confirmed")
		require.ErrorIs(t, l.Unlock(canceled), redlock.ErrAlreadyUnlocked, "a second Unlock makes no call")
	})
}

func TestLockWaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		_, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Millisecond)))
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l2, err := c.Lock(ctx, "k")
			if err == nil {
				err = l2.Unlock(ctx)
			}
			got <- err
		}()
		select {
		case err := <-got:
			t.Fatalf("Lock returned %v while the lock was held", err)
		case <-time.After(20 * time.Millisecond):
		}
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, <-got)
	})
}

// Eight goroutines take and free one key 25 times each through one Client:
// never two holders at once, and every Lock is granted. In a bubble
// (testing/synctest): its clock moves only when every goroutine waits, so a
// machine too loaded to run a memory node's call within the node timeout
// (200ms by default; once in the project's CI, -race beside other packages)
// does not fail an Unlock with "context deadline exceeded". The goroutines
// still run at once on the machine's cores.
func TestNeverTwoHolders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		_, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ExponentialBackoff(100*time.Microsecond, 2*time.Millisecond)))
		var (
			inside atomic.Int32
			grants atomic.Int32
			wg     sync.WaitGroup
		)
		for range 8 {
			wg.Go(func() {
				for range 25 {
					l, err := c.Lock(ctx, "k")
					if !assert.NoError(t, err) {
						return
					}
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d holders at once", n)
					}
					grants.Add(1)
					inside.Add(-1)
					assert.NoError(t, l.Unlock(ctx))
				}
			})
		}
		wg.Wait()
		assert.EqualValues(t, 200, grants.Load())
	})
}

func TestEvenNodeCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(4)
		c := newClient(t, nodes)
		assert.Equal(t, 3, c.Quorum())
		mem[0].SetDown(true)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		mem[1].SetDown(true)
		_, err = c.TryLock(t.Context(), "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained, "2 of 4 is not a quorum")
	})
}

func TestClosedClient(t *testing.T) {
	_, nodes := memNodes(3)
	c, err := redlock.New(nodes)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	_, err = c.TryLock(t.Context(), "k")
	require.ErrorIs(t, err, redlock.ErrClosed)
	require.False(t, errors.Is(err, redlock.ErrNotObtained))
}

// A SET still in flight when TryLock returned must not land after Unlock and
// keep the key for a whole TTL.
func TestUnlockFollowsLateSets(t *testing.T) {
	ctx := t.Context()
	mem, nodes := memNodes(5)
	c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(5*time.Second))
	for round := range 20 {
		mem[3].SetStalled(true)
		mem[4].SetStalled(true)
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err, round)
		require.NoError(t, l.Unlock(ctx))
		mem[3].SetStalled(false) // the late SETs land now, after Unlock
		mem[4].SetStalled(false)
		require.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond,
			"round %d: a late SET kept the key after Unlock", round)
	}
}
