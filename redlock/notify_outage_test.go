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

// A waiter whose subscriptions live through an outage of the nodes is woken
// as it would be through the Redis drivers, whose pub/sub subscribes again
// on a new connection once the old one broke and then wakes each
// subscriber once, since a release may have been published meanwhile. The
// memory node kept the subscriptions, but sent nothing when the node came
// back: a waiter that missed the release while its connections were cut
// waited for its backoff (a minute here) before it tried again. It tries at
// once now. And a release after an outage of every node (down, then up)
// wakes the waiter at once, by its notice: the backoff is a minute, and
// the bubble's clock says no time passed.
func TestWaiterWokenAfterOutage(t *testing.T) {
	setup := func(t *testing.T) (stores []*memory.Node, waiterConns []*memory.Node, l *redlock.Lock, got chan time.Time) {
		stores = []*memory.Node{memory.New(), memory.New(), memory.New()}
		holderNodes := make([]driver.Node, 3)
		waiterNodes := make([]driver.Node, 3)
		for i, s := range stores {
			holderNodes[i] = s.Conn()
			waiterConns = append(waiterConns, s.Conn())
			waiterNodes[i] = waiterConns[i]
		}
		holder := newClient(t, holderNodes, redlock.WithTTL(time.Hour))
		l, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		waiter := newClient(t, waiterNodes, redlock.WithTTL(time.Hour), redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
		got = make(chan time.Time, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			wl, err := waiter.Lock(ctx, "k")
			if err != nil {
				t.Error(err)
				got <- time.Time{}
				return
			}
			got <- time.Now()
			wl.Unlock(context.Background())
		}()
		synctest.Wait() // the waiter found it held, subscribed, and waits
		return stores, waiterConns, l, got
	}
	t.Run("ReleaseMissedWhileCut", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, conns, l, got := setup(t)
			for _, c := range conns {
				c.SetConnDown(true)
			}
			require.NoError(t, l.Unlock(t.Context())) // published; the waiter hears nothing
			synctest.Wait()
			back := time.Now()
			for _, c := range conns {
				c.SetConnDown(false)
			}
			require.Equal(t, back, <-got, "the waiter got the lock after its backoff, not when its connections came back")
		})
	})
	t.Run("ReleaseAfterDownAndUp", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			stores, _, l, got := setup(t)
			for _, s := range stores {
				s.SetDown(true)
			}
			time.Sleep(10 * time.Second)
			for _, s := range stores {
				s.SetDown(false)
			}
			synctest.Wait() // the waiter, woken, found it held again
			released := time.Now()
			require.NoError(t, l.Unlock(t.Context()))
			require.Equal(t, released, <-got, "the waiter got the lock after its backoff, not by the release's notice")
		})
	})
}
