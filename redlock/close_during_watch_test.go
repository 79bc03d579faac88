package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// unansweredSubscribe is a memory node whose subscriptions are never
// confirmed: each waits for its context (a pub/sub connection that the
// server does not answer).
type unansweredSubscribe struct{ *memory.Node }

func (unansweredSubscribe) Subscribe(ctx context.Context, _ string, _ chan<- struct{}) (func(), error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A Lock that waits for a busy key while its subscriptions to the releases
// are being made returns ErrClosed when Close begins, at once, as Close says
// of the Locks that wait between attempts; and Close does not wait for those
// subscriptions' node timeout. Before, the waiter stayed in watch until the
// node timeout, and Close waited for its subscriptions as long: both took the
// whole node timeout (1s here).
func TestCloseEndsWaiterSubscribing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = time.Second
		mem, nodes := memNodes(3)
		holder := newClient(t, nodes)
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		conns := make([]driver.Node, len(mem)) // the waiter's own connections
		for i, m := range mem {
			conns[i] = unansweredSubscribe{m.Conn()}
		}
		c, err := redlock.New(conns, redlock.WithNodeTimeout(nodeTimeout))
		require.NoError(t, err)
		type result struct {
			err error
			at  time.Time
		}
		got := make(chan result, 1)
		go func() {
			_, err := c.Lock(context.Background(), "k")
			got <- result{err, time.Now()}
		}()
		time.Sleep(10 * time.Millisecond) // its first attempt refused; subscribing
		began := time.Now()
		require.NoError(t, c.Close())
		closed := time.Since(began)
		r := <-got
		require.ErrorIs(t, r.err, redlock.ErrClosed)
		require.True(t, errors.Is(r.err, redlock.ErrNotObtained), "%v", r.err)
		// Virtual time: nothing answers later than now but the node timeout.
		require.Less(t, r.at.Sub(began), nodeTimeout/2, "the waiter returned when its subscriptions timed out, not when Close began")
		require.Less(t, closed, nodeTimeout/2, "Close waited for the waiter's subscriptions")
		require.NoError(t, held.Unlock(t.Context()))
	})
}
