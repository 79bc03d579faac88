package redlock_test

import (
	"context"
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

// saturatedQueuer is a memory node that queues (driver.Queuer), whose
// extensions, once saturated is set, wait in its queue until their context
// ends: as on a node whose queue is long, which bounds the wait by the
// extension's own bound (the lock's validity), not by the node timeout.
type saturatedQueuer struct {
	*memory.Node
	saturated *atomic.Bool
}

func (n saturatedQueuer) Pending() driver.Pending { return driver.Pending{} }

func (n saturatedQueuer) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.saturated.Load() {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

// Do's doc bounded the notice of a loss on the nodes by one extension
// interval plus the node timeout (the time of the extension that finds it).
// On nodes that queue, an extension waits in the queue for as long as its
// lock's validity allows: the loss here is noticed only when the validity
// ends, far later than that bound, and fn's context is canceled then, at
// Until, never later. The doc now says so. (A doc fix: the test shows the
// behaviour the doc describes; it passed before the doc changed.)
func TestDoLossNoticeQueuedExtensionBoundByValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			ttl         = 2 * time.Second
			interval    = 100 * time.Millisecond
			nodeTimeout = 300 * time.Millisecond
		)
		var saturated atomic.Bool
		mem := make([]*memory.Node, 3)
		nodes := make([]driver.Node, 3)
		for i := range mem {
			mem[i] = memory.New()
			nodes[i] = saturatedQueuer{mem[i], &saturated}
		}
		c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout), redlock.WithExtendInterval(interval))
		require.NoError(t, err)
		defer c.Close()
		var noticed time.Duration
		err = c.Do(t.Context(), "k", func(ctx context.Context) error {
			time.Sleep(interval + interval/2) // one extension succeeded
			saturated.Store(true)
			for _, m := range mem {
				m.Delete("k") // lost
			}
			lostAt := time.Now()
			<-ctx.Done()
			noticed = time.Since(lostAt)
			assert.ErrorIs(t, context.Cause(ctx), redlock.ErrLockLost)
			return nil
		})
		require.ErrorIs(t, err, redlock.ErrLockLost)
		t.Logf("noticed %v after the loss", noticed)
		assert.Greater(t, noticed, interval+nodeTimeout, "the queued extension's wait is bounded by the validity, not the node timeout")
		// The validity runs from the last successful extension, which
		// started at most one interval before the loss.
		assert.LessOrEqual(t, noticed, ttl, "fn's context canceled after the lock's validity ended")
	})
}
