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

// lateConfirm is a memory node whose subscriptions are confirmed only once
// gate closes: within the node timeout, but after the first waiter's
// subscription to another node was (see Client.Lock).
type lateConfirm struct {
	*memory.Node
	gate <-chan struct{}
}

func (n lateConfirm) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	select {
	case <-n.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.Node.Subscribe(ctx, key, notify)
}

// A waiter that takes over the subscriptions of one that got the lock skips
// its attempt at once only if they listened on enough nodes when that lock
// was granted. Subscriptions confirmed later (within the node timeout, after
// the first one) may have missed the release of that lock, which can come
// before the next waiter takes the turn: here it is still in its Backoff
// (which returns once the release is done), as a goroutine that is slow to
// run again would be. It then tries at once and gets the free key, rather
// than sleep through that release until its Backoff (90s).
func TestTurnHandOverCountsListenersAtGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		subGate := make(chan struct{})
		late := make([]driver.Node, len(mem))
		for i, m := range mem {
			late[i] = m
			if i > 0 {
				late[i] = lateConfirm{m, subGate}
			}
		}
		// Node 0 holds another value for good: no grant there, and no
		// release is published there.
		ok, err := mem[0].SetNX(t.Context(), "k", "other", 10*time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		holder := newClient(t, nodes, redlock.WithTTL(2*time.Hour))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		c := newClient(t, late, redlock.WithTTL(2*time.Hour), redlock.WithNodeTimeout(time.Hour))

		got := make(chan *redlock.Lock, 2)
		lock := func(call string, b redlock.Backoff, opts ...redlock.Option) {
			opts = append(opts, redlock.WithBackoff(b))
			if l, err := c.Lock(context.WithValue(t.Context(), callKey{}, call), "k", opts...); err == nil {
				got <- l
			}
		}
		// Has the turn and listens on node 0 only; polls after 100s.
		go lock("first", func(int) time.Duration { return 100 * time.Second })
		synctest.Wait()
		// Waits for the turn, trying every 90s; its Backoff after its
		// second attempt returns once backoffGate closes.
		backoffGate := make(chan struct{})
		go lock("second", func(attempt int) time.Duration {
			if attempt == 2 {
				<-backoffGate
			}
			return 90 * time.Second
		}, redlock.WithMaxAttempts(1000))
		time.Sleep(95 * time.Second) // the second's attempt at 90s, refused
		synctest.Wait()
		require.NoError(t, held.Unlock(t.Context())) // unheard: nodes 1-4 have no subscription yet
		synctest.Wait()
		first := <-got // at its poll, at 100s
		synctest.Wait()
		require.NoError(t, first.Unlock(t.Context())) // published on nodes 1-4: still unheard
		synctest.Wait()                               // on the fourth too, after Unlock's quorum
		close(subGate)                                // now confirmed there
		synctest.Wait()
		close(backoffGate) // the second takes the turn
		time.Sleep(10 * time.Second)
		synctest.Wait()
		select {
		case l := <-got:
			require.NoError(t, l.Unlock(t.Context()))
		default:
			t.Fatalf("the second waiter slept through the release of the first's lock (%d of %d nodes hold the key)", holders(mem, "k"), len(mem))
		}
	})
}
