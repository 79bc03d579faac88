package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// keyRefusingNode is a memory node whose extensions of the keys in refuse
// fail with the error stored there.
type keyRefusingNode struct {
	*memory.Node
	refuse *sync.Map // key: error
}

func (n keyRefusingNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err, ok := n.refuse.Load(key); ok {
		return false, err.(error)
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

// A Do inside another Do's function whose own lock is given up (its
// extension refused for good) after the outer loss canceled its function's
// context returns its own refusal's error, not the outer one's: fn's context
// had the outer cause (the first cancellation's stands), and Do read the
// loss's cause from it, so the inner Do said the outer lock's NOPERM as the
// reason its lock was given up, and not its own.
func TestDoNestedRefusalIsItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl, every = 30 * time.Second, 10 * time.Second
		mem, _ := memNodes(3)
		outerRefusal := errors.New("NOPERM this user has no permissions to access the 'a' key")
		innerRefusal := errors.New("NOPERM this user has no permissions to access the 'b' key")
		var refuse sync.Map
		nodes := make([]driver.Node, 3)
		for i, m := range mem {
			nodes[i] = keyRefusingNode{m, &refuse}
		}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithExtendInterval(every))
		var inner error
		outer := c.Do(t.Context(), "a", func(ctx context.Context) error {
			inner = c.Do(ctx, "b", func(fctx context.Context) error {
				refuse.Store("a", outerRefusal)
				<-fctx.Done() // the outer lock given up
				require.ErrorIs(t, context.Cause(fctx), outerRefusal)
				synctest.Wait()
				refuse.Store("b", innerRefusal) // this fn does not stop at once: its own lock is given up too
				time.Sleep(2 * every)
				return nil
			})
			return nil
		})
		require.ErrorIs(t, outer, outerRefusal)
		require.ErrorIs(t, inner, redlock.ErrLockLost)
		require.ErrorIs(t, inner, innerRefusal, "the inner Do says why its lock was given up: %v", inner)
		require.NotErrorIs(t, inner, outerRefusal, "the outer lock's refusal is not the inner one's: %v", inner)
	})
}
