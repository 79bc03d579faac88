package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// refusedSubscribe is a memory node whose subscriptions all fail with err,
// each asked counted in asked.
type refusedSubscribe struct {
	*memory.Node
	err   error
	asked *atomic.Int32
}

func (n refusedSubscribe) Subscribe(context.Context, string, chan<- struct{}) (func(), error) {
	n.asked.Add(1)
	return nil, n.err
}

// A waiter whose subscription a node refuses with an error retrying cannot
// fix (NOPERM: an ACL user without SSUBSCRIBE or the channel) asks that node
// once in its wait, and polls it, rather than asking again a second later,
// then at gaps doubling to 30s for as long as it waits (each refusal an
// entry of the server's ACL LOG); a node whose subscription failed otherwise
// (a timeout, a node restarting) is still asked again. Here two nodes of
// three refuse with NOPERM and the third fails with a transient error, for
// the ten minutes the waiter waits.
func TestPermanentSubscribeRefusalNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		noperm := errors.New("NOPERM User nosub has no permissions to access one of the channels used as arguments")
		asked := make([]atomic.Int32, 3)
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			err := noperm
			if i == 2 {
				err = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
			}
			nodes[i] = refusedSubscribe{memory.New(), err, &asked[i]}
		}
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		_, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		_, err = c.Lock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		for i := range 2 {
			require.Equal(t, int32(1), asked[i].Load(), "subscriptions asked of node %d, which refuses them with NOPERM", i)
		}
		// 1s, 2s, 4s, 8s, 16s, 30s... (each a random time between half
		// the gap and the gap): more than 20 in ten minutes.
		require.Greater(t, asked[2].Load(), int32(20), "subscriptions asked of the node whose subscription failed with a transient error")
	})
}
