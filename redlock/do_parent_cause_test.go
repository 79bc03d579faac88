package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// A Do inside another Do's function (two locks taken in order) gets the outer
// function's context, which is canceled with ErrLockLost as its cause when
// the outer lock is lost. The inner lock is not lost by that: it was held
// (and extended) until its function returned and released by a quorum, so
// the inner Do returns its function's error alone. Before, Do read "lost"
// from its function's context's cause, which the parent's cancellation had
// set, and the inner Do said ErrLockLost of a lock that was never lost.
func TestDoInnerLockNotLostWithOuter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
		var inner error
		innerRan := false
		outer := c.Do(t.Context(), "a", func(ctx context.Context) error {
			inner = c.Do(ctx, "b", func(ctx context.Context) error {
				innerRan = true
				for _, m := range mem {
					m.Delete("a") // the outer lock is lost: evicted, say
				}
				<-ctx.Done() // the outer Do's keeper finds it at its next extension
				assert.ErrorIs(t, context.Cause(ctx), redlock.ErrLockLost, "the outer loss reaches the inner function")
				// The inner lock is still held on every node (once the
				// SET that the grant did not wait for has landed): only
				// the outer one was lost.
				synctest.Wait()
				assert.Equal(t, 3, holders(mem, "b"), "the inner lock is held")
				return nil
			})
			return ctx.Err()
		})
		require.True(t, innerRan)
		require.ErrorIs(t, outer, redlock.ErrLockLost, "the outer lock was lost")
		assert.NoError(t, inner, "the inner lock was held until its function returned, then released")
		synctest.Wait() // the release that Unlock's quorum did not wait for
		assert.Equal(t, 0, holders(mem, "b"), "the inner lock was released")
	})
}

// The same with a caller's own cancellation whose cause is ErrLockLost (as
// a caller that forwards a loss it learned elsewhere would): the lock of the
// Do was held throughout, so Do says nothing of a loss.
func TestDoCallerCauseIsNotALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		errFn := errors.New("fn stopped")
		err := c.Do(ctx, "k", func(fctx context.Context) error {
			cancel(redlock.ErrLockLost)
			<-fctx.Done()
			synctest.Wait() // the SET that the grant did not wait for, canceled or not
			assert.GreaterOrEqual(t, holders(mem, "k"), c.Quorum(), "the lock is held")
			return errFn
		})
		require.ErrorIs(t, err, errFn)
		assert.NotErrorIs(t, err, redlock.ErrLockLost, "the lock was not lost: %v", err)
	})
}

// doEnds records the DoDone of every Do, by key.
type doEnds struct {
	redlock.NopObserver
	mu   sync.Mutex
	done map[string]redlock.DoDone
}

func (o *doEnds) Do(ctx context.Context, _ redlock.DoStart) (context.Context, func(redlock.DoDone)) {
	return ctx, func(d redlock.DoDone) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.done == nil {
			o.done = make(map[string]redlock.DoDone)
		}
		o.done[d.Key] = d
	}
}

// DoDone.Lost says whether the Do's own lock was lost, not whether its
// function's error matches ErrLockLost: a function inside another Do's
// returns its context's cause (as README's examples do), the outer lock's
// loss, and the inner Do returns that error as it is; its lock was held
// throughout. Before, Lost was read from the error Do returned, fn's
// included, and said true for the inner lock; the outer one's is true.
func TestDoDoneLostIsTheLocksOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		obs := &doEnds{}
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithObserver(obs))
		var inner error
		outer := c.Do(t.Context(), "a", func(ctx context.Context) error {
			inner = c.Do(ctx, "b", func(ctx context.Context) error {
				for _, m := range mem {
					m.Delete("a")
				}
				<-ctx.Done()
				return context.Cause(ctx) // the outer lock's loss
			})
			return nil
		})
		require.ErrorIs(t, outer, redlock.ErrLockLost)
		require.ErrorIs(t, inner, redlock.ErrLockLost, "fn's own error, returned as it is")
		obs.mu.Lock()
		defer obs.mu.Unlock()
		assert.True(t, obs.done["a"].Lost, "the outer lock was lost")
		assert.False(t, obs.done["b"].Lost, "the inner lock was held until its function returned: %v", obs.done["b"].Err)
		assert.Equal(t, inner, obs.done["b"].Err, "Err is what Do returned")
	})
}
