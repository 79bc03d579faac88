package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Defect 5: an extension interval that leaves no room for an extension round
// inside the validity is refused.
func TestImpossibleExtendInterval(t *testing.T) {
	three := func() []driver.Node { return []driver.Node{memory.New(), memory.New(), memory.New()} }
	for _, tc := range []struct {
		name     string
		opts     []redlock.Option
		rejected bool
	}{
		{"199ms of 200ms", []redlock.Option{redlock.WithTTL(200 * time.Millisecond), redlock.WithExtendInterval(199 * time.Millisecond)}, true},
		// TTL 200ms: drift 4ms, node timeout 20ms: interval + 20ms must stay below 196ms.
		{"at the limit", []redlock.Option{redlock.WithTTL(200 * time.Millisecond), redlock.WithExtendInterval(176 * time.Millisecond)}, true},
		{"just inside", []redlock.Option{redlock.WithTTL(200 * time.Millisecond), redlock.WithExtendInterval(175 * time.Millisecond)}, false},
		{"long node timeout", []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(600 * time.Millisecond), redlock.WithExtendInterval(400 * time.Millisecond)}, true},
		{"default interval fits a long node timeout", []redlock.Option{redlock.WithTTL(2 * time.Second), redlock.WithNodeTimeout(1500 * time.Millisecond)}, false},
		{"node timeout eats the validity", []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(995 * time.Millisecond), redlock.WithExtendInterval(time.Millisecond)}, true},
		// Without WithExtendInterval, for TryLock and Lock (safety scenario 4b).
		{"node timeout eats the validity, default interval", []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(995 * time.Millisecond)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.New(three(), tc.opts...)
			if !tc.rejected {
				require.NoError(t, err)
				require.NoError(t, c.Close())
				return
			}
			require.Nil(t, c)
			require.ErrorContains(t, err, "no room")
		})
	}
}

// countSetNX counts the SETs that reach a node; it hides the node's
// notifications, so that Lock polls.
type countSetNX struct {
	driver.Node
	n *atomic.Int64
}

func (c countSetNX) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	c.n.Add(1)
	return c.Node.SetNX(ctx, key, value, ttl)
}

// Defect 8: a Backoff that returns 0 (or less) must not make Lock spin on the
// network: every wait is at least 1ms.
func TestZeroBackoffDoesNotSpin(t *testing.T) {
	mem, _ := memNodes(3)
	var sets atomic.Int64
	nodes := []driver.Node{countSetNX{mem[0], &sets}, opaque{mem[1]}, opaque{mem[2]}}
	for _, b := range []redlock.Backoff{
		func(int) time.Duration { return 0 },
		func(int) time.Duration { return -time.Second },
		redlock.ExponentialBackoff(0, 0),
	} {
		// liveNodeTimeout: with the default 200ms, on the real clock, a
		// machine that stalls the test that long fails the holder's TryLock
		// or Unlock. The real clock stays: in a bubble, a Lock that spun
		// would never let its deadline come, and hang rather than fail.
		holder := newClient(t, nodes, redlock.WithNodeTimeout(liveNodeTimeout))
		l, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		c := newClient(t, nodes, redlock.WithBackoff(b), redlock.WithNodeTimeout(liveNodeTimeout))
		sets.Store(0)
		const wait = 100 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		start := time.Now()
		_, err = c.Lock(ctx, "k")
		took := time.Since(start)
		cancel()
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		// At most one attempt per millisecond of the time Lock took, and
		// a generous margin. Counted over that time, not over the
		// context's 100ms: on a loaded machine the deadline's timer fires
		// late, and Lock rightly tries on meanwhile (121 attempts in a
		// Lock that ran past 120ms failed a bound of 120).
		assert.LessOrEqual(t, sets.Load(), int64(took/time.Millisecond)+20, "attempts in %v", took)
		require.NoError(t, l.Unlock(t.Context()))
	}
}
