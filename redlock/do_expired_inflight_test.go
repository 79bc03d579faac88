package redlock_test

import (
	"context"
	"errors"
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
// had ended: as Do's doc and LockEnd.Err's say now, it is not told, and Do's
// error is the release's account alone (the key found gone), LockEnd.Err
// nil. Before, they said Do's error and LockEnd.Err had the last
// extension's error whenever it failed.
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
		var ve *redlock.VoteError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, [2]int{0, 0}, [2]int{ve.Granted, ve.Failed}, "Do's error is the release's account alone, the key found gone: %v", err)
		require.Greater(t, ve.Refused, ve.Nodes-ve.Needed, "Do's error is the release's account alone, the key found gone: %v", err)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "the extension judged after the expiry is not told: %v", err)
		require.NotContains(t, err.Error(), "the release then:", "no extension's error before the release's: %v", err)
		e := obs.only(t)
		require.Equal(t, redlock.EndExpired, e.How)
		require.NoError(t, e.Err, "no extension had failed when the validity ended")
	})
}
