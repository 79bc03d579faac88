package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// stalledSubscribe is an in-process node whose Subscribe outlives its context
// by seconds, as a client's own dial of a pub/sub connection to a stalled
// server can (a handshake bounded by the client's dial timeout alone).
type stalledSubscribe struct{ *memory.Node }

func (n stalledSubscribe) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	time.Sleep(5 * time.Second) // ignores ctx
	return n.Node.Subscribe(ctx, key, notify)
}

// Lock's wait for its first release subscription is bounded by its context
// and the node timeout, also when a node's Subscribe outlives them: a Lock
// with a 300ms context on a held key returns within about that. Before, it
// waited for the Subscribe, 5s (a rueidis or valkey-go node over the user's
// cluster client, whose subscription dialed a stalled shard, took 3-5.7s
// in TestRedisClusterCloseWhileSubscriptionDialsStalled).
func TestLockWaitForSubscriptionBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = stalledSubscribe{m}
		}
		c := newClient(t, nodes, redlock.WithNodeTimeout(100*time.Millisecond))
		held, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = c.Lock(ctx, "k")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.LessOrEqual(t, time.Since(start), 300*time.Millisecond, "Lock with a 300ms context waited for a Subscribe that outlived it")
		require.NoError(t, held.Unlock(t.Context()))
		time.Sleep(10 * time.Second) // the subscriptions end before the bubble does
	})
}
