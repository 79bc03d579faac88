package redlock_test

import (
	"context"
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
// (every node: a timeout), and past the key's TTL on the nodes, so that
// Do's release finds the key gone. Do's doc says that, when the validity
// ended, Do's error has the error of the lock's last extension if it failed
// (why the lock was not extended in time), with the release's after it;
// LockEnd.Err's doc says that LockEnd.Err (EndExpired) is that error too.
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
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			time.Sleep(interval + interval/2) // one extension succeeded
			saturated.Store(true)
			<-ctx.Done()
			// Past the queued extension's bound (a TTL from its start, an
			// interval after the validity's start) and the key's TTL.
			time.Sleep(3 * interval)
			return nil
		})
		last := obs.last(t)
		require.Error(t, last.Err, "the last extension failed, before fn returned")
		require.ErrorIs(t, last.Err, context.DeadlineExceeded, "it timed out in the queues")
		t.Logf("last extension: %v", last.Err)
		t.Logf("Do: %v", err)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		var ve *redlock.VoteError
		require.ErrorAs(t, err, &ve)
		require.Greater(t, ve.Failed, ve.Nodes-ve.Needed, "Do's error has the last extension's votes (it failed: why the lock was not extended in time), not the release's only: %v", err)
		require.ErrorIs(t, err, context.DeadlineExceeded, "Do's error has the last extension's node errors: %v", err)
		e := obs.only(t)
		require.Equal(t, redlock.EndExpired, e.How)
		require.ErrorIs(t, e.Err, context.DeadlineExceeded, "LockEnd.Err is the last extension's error, which failed")
	})
}
