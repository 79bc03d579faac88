package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// A waiter that gives up during the attempt a release woke it for (its
// context ends while its SETs are on their way) leaves its subscriptions to
// the next waiter of its Client, and that release's notice is spent: the
// next waiter tries at once, as a waiter that waited for its turn does, and
// does not sleep through the release until its Backoff.
func TestTurnHandOverAfterGiveUpTriesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		var gate atomic.Pointer[chan struct{}]
		gated := make([]driver.Node, len(mem))
		for i, m := range mem {
			gated[i] = behindSet{m, &gate}
		}
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		c := newClient(t, gated, redlock.WithTTL(time.Hour),
			redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, len(mem), holders(mem, "k"), "the holder holds every node")

		firstCtx, giveUp := context.WithCancel(t.Context())
		defer giveUp()
		firstErr := make(chan error, 1)
		go func() {
			l, err := c.Lock(firstCtx, "k")
			if err == nil {
				_ = l.Unlock(context.Background())
			}
			firstErr <- err
		}()
		synctest.Wait() // refused, it has the turn and listens
		got := make(chan *redlock.Lock, 1)
		go func() {
			if l, err := c.Lock(t.Context(), "k"); err == nil {
				got <- l
			}
		}()
		synctest.Wait() // refused, it waits for the turn

		// The release wakes the first waiter, whose SETs wait at the gate
		// until it has given up.
		behind := make(chan struct{})
		gate.Store(&behind)
		require.NoError(t, held.Unlock(t.Context()))
		synctest.Wait()
		giveUp()
		synctest.Wait()
		gate.Store(nil)
		close(behind)
		require.Error(t, <-firstErr, "the first waiter gave up")
		synctest.Wait()

		time.Sleep(time.Minute) // far less than the Backoff's hour
		synctest.Wait()
		select {
		case l := <-got:
			require.NoError(t, l.Unlock(t.Context()))
		default:
			t.Fatalf("the second waiter did not get the free key within a minute (%d of %d nodes hold it): it slept through the release", holders(mem, "k"), len(mem))
		}
	})
}
