package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// Over nodes that publish no releases, a waiter that waited for another
// waiter of its Client on the key tries again at once when it gets the turn,
// as Backoff says: the lock may have been released meanwhile, unheard.
func TestBackoffNoWaitAfterTurnWithoutNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = quietNode{m}
		}
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		c := newClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		first, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		go c.Lock(first, "k") // has the turn, gives up at 30s
		synctest.Wait()
		start := time.Now()
		got := make(chan error, 1)
		go func() {
			l, err := c.Lock(t.Context(), "k")
			if err == nil {
				err = l.Unlock(t.Context())
			}
			got <- err
		}()
		synctest.Wait()
		time.Sleep(10 * time.Second)
		require.NoError(t, held.Unlock(t.Context())) // unheard: nothing publishes
		require.NoError(t, <-got)
		require.Less(t, time.Since(start), 31*time.Second,
			"the second waiter got the turn at 30s and waited its Backoff (1m) before trying")
	})
}
