package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// tinyRoomTTL is a TTL that leaves a node timeout of nodeTimeout the
// smallest room for Do's extensions: TTL - drift - node timeout = 1ns, half
// of which, the default extension interval's formula, is 0.
func tinyRoomTTL(t *testing.T, nodeTimeout time.Duration) time.Duration {
	t.Helper()
	drift := func(ttl time.Duration) time.Duration {
		return time.Duration(float64(ttl)*redlock.DefaultDriftFactor) + 2*time.Millisecond
	}
	for ttl := nodeTimeout; ttl < 2*nodeTimeout; ttl++ {
		switch room := ttl - drift(ttl) - nodeTimeout; {
		case room == 1:
			return ttl
		case room > 1:
			t.Fatalf("no TTL leaves a room of 1ns beside the node timeout %v", nodeTimeout)
		}
	}
	t.Fatal("unreachable")
	return 0
}

// A node timeout just below the TTL less the drift leaves Do's default
// extension interval a few nanoseconds, or none: New must accept it without
// WithExtendInterval, as it accepts a node timeout that leaves no room, and
// not refuse an interval the caller never gave ("extend interval 0s is not
// positive").
func TestDefaultExtendIntervalTinyRoomAccepted(t *testing.T) {
	const nodeTimeout = 200 * time.Millisecond
	ttl := tinyRoomTTL(t, nodeTimeout)
	_, nodes := memNodes(3)
	c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err, "TTL %v, node timeout %v, no WithExtendInterval", ttl, nodeTimeout)
	require.NoError(t, c.Close())
}

// extendStarts counts the Extends a Client starts, Do's included.
type extendStarts struct {
	redlock.NopObserver
	n *atomic.Int64
}

func (e extendStarts) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	e.n.Add(1)
	return ctx, func(redlock.ExtendDone) {}
}

// A Do whose TTL (given to the call) leaves the Client's node timeout a room
// of 1ns extends its lock at most about once a millisecond, through every
// Redis driver, not in a loop without pause: its default interval was
// room/2 = 0, and Do extended as fast as the servers answered.
func TestDoTinyRoomDoesNotSpin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			var extends atomic.Int64
			c := openRedis(t, name, servers, redlock.WithObserver(extendStarts{n: &extends}))
			ttl := tinyRoomTTL(t, c.NodeTimeout())
			var took time.Duration
			err := c.Do(t.Context(), "k", func(ctx context.Context) error {
				start := time.Now()
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				took = time.Since(start)
				return nil
			}, redlock.WithTTL(ttl))
			// The lock's validity is the TTL less the drift, 200ms,
			// which a loaded machine's extensions may not keep: the
			// count is the point, not the outcome.
			if err != nil {
				t.Logf("Do: %v", err)
			}
			// One extension per millisecond of fn's time and a
			// margin, counted over the time fn took, which a loaded
			// machine stretches.
			assert.LessOrEqual(t, extends.Load(), int64(took/time.Millisecond)+20, "extensions while fn ran %v", took)
		})
	}
}
