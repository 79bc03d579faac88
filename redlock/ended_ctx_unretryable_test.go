package redlock_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// cancelingFencer is a memory node whose SetNXFence ends a context (the
// caller's) once it has answered: the acquisition's SET round is decided,
// and the caller's context has ended, when TryLock goes on.
type cancelingFencer struct {
	*memory.Node
	cancel context.CancelFunc
}

func (n cancelingFencer) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	defer n.cancel()
	return n.Node.SetNXFence(ctx, key, value, ttl, fenceKey)
}

// sameServer is a memory node that says it reaches the server id.
type sameServer struct {
	*memory.Node
	id string
}

func (n sameServer) Identity(context.Context) ([]string, error) { return []string{"run:" + n.id}, nil }

// The errors that TryLock returns as it returns bad input's, since retrying
// cannot fix them (a fencing counter at its largest value, two nodes that
// reach one server), include ctx.Err() when the context had ended, as every
// call's error does; they did not. Each case runs in a bubble
// (testing/synctest): on the real clock, a machine that stalls the test past
// the default 200ms node timeout fails the SET (or the identity question)
// whose answer makes the error the test checks.
func TestUnretryableErrorsIncludeContextErr(t *testing.T) {
	t.Run("fence exhausted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := memory.New()
			fk := driver.FenceKey("k")
			ok, err := m.SetNX(t.Context(), "setter", "v", time.Minute)
			require.True(t, ok)
			require.NoError(t, err)
			ok, err = m.RaiseFence(t.Context(), "setter", "v", fk, math.MaxUint64)
			require.True(t, ok)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// One node: its call runs on the caller's goroutine, and its reply
			// is taken before the context is looked at.
			c, err := redlock.New([]driver.Node{cancelingFencer{m, cancel}}, redlock.WithFencing())
			require.NoError(t, err)
			defer c.Close()
			_, err = c.TryLock(ctx, "k")
			require.ErrorContains(t, err, "fencing counter")
			require.ErrorIs(t, err, context.Canceled, "the context ended during the call")
		})
	})
	t.Run("duplicate node", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, err := redlock.New([]driver.Node{sameServer{memory.New(), "a"}, sameServer{memory.New(), "a"}, sameServer{memory.New(), "b"}})
			require.NoError(t, err)
			defer c.Close()
			_, err = c.TryLock(t.Context(), "k")
			require.ErrorContains(t, err, "reach the same server")
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err = c.TryLock(ctx, "k")
			require.ErrorContains(t, err, "reach the same server")
			require.ErrorIs(t, err, context.Canceled, "the context had ended")
		})
	})
}
