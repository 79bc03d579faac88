package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// extendsAndEnds records the ExtendDone and LockEnd events.
type extendsAndEnds struct {
	lockEnds
	mu      sync.Mutex
	extends []redlock.ExtendDone
}

func (o *extendsAndEnds) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return ctx, func(d redlock.ExtendDone) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.extends = append(o.extends, d)
	}
}

// last returns the last ExtendDone seen.
func (o *extendsAndEnds) last(t *testing.T) redlock.ExtendDone {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	require.NotEmpty(t, o.extends, "no extension ended")
	return o.extends[len(o.extends)-1]
}

// A lock held through Do on nodes that queue (driver.Queuer): one extension
// succeeds, then the queues saturate and the next extension waits in them
// until its own bound, past the lock's validity (see
// TestDoLossNoticeQueuedExtensionBoundByValidity). fn's context is canceled
// at Until, and fn winds down past that extension's bound, where it fails
// (a timeout on too many nodes), and past the key's TTL on the nodes, so that
// Do's release finds the key gone. The extension was judged after the lock
// had ended, so its own error is not the cause; the cause says that the
// validity ended while an extension was in flight (Lock.expireLocked), and
// Do's error tells it before the release's account (the key found gone).
// Before, Do's error was the release's account alone, "0 of 3 nodes
// agreed, 2 needed (2 refused, 0 failed)", as if the nodes had refused the
// lock, and LockEnd.Err nil.
func TestDoExpiredWithExtensionInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			ttl         = 2 * time.Second
			interval    = 100 * time.Millisecond
			nodeTimeout = 300 * time.Millisecond
		)
		var saturated atomic.Bool
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = saturatedQueuer{memory.New(), &saturated}
		}
		obs := &extendsAndEnds{}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout),
			redlock.WithExtendInterval(interval), redlock.WithObserver(obs))
		var judged bool
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			time.Sleep(interval + interval/2) // one extension succeeded
			saturated.Store(true)
			<-ctx.Done()
			// Past the queued extension's bound (a TTL from its start, an
			// interval after the validity's start) and the key's TTL.
			time.Sleep(3 * interval)
			last := obs.last(t)
			judged = errors.Is(last.Err, context.DeadlineExceeded) && errors.Is(last.Err, redlock.ErrUnavailable)
			return nil
		})
		require.True(t, judged, "the last extension failed, timed out in the queues, before fn returned")
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.Contains(t, err.Error(), "its validity ended while an extension was still in flight", "Do's error says why the lock was not extended in time: %v", err)
		require.Contains(t, err.Error(), "the release then:\n0 of 3 nodes agreed, 2 needed (2 refused, 0 failed)", "the release's account follows: %v", err)
		require.NotErrorIs(t, err, redlock.ErrUnavailable, "a release that finds the keys gone is no outage: %v", err)
		var ve *redlock.VoteError
		require.False(t, errors.As(err, &ve), "the cause has no votes; the release's are not the ones errors.As finds: %v", err)
		e := obs.only(t)
		require.Equal(t, redlock.EndExpired, e.How)
		require.ErrorIs(t, e.Err, redlock.ErrLockLost)
		require.Contains(t, fmt.Sprint(e.Err), "its validity ended while an extension was still in flight", "LockEnd.Err says it too")
	})
}
