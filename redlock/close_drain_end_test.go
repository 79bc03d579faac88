package redlock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// hangingSetNode is a memory node whose SETs of keys ending in "hang" wait
// for their context: a call that keeps Close waiting for it (up to the node
// timeout) before it stops the keeper.
type hangingSetNode struct{ *memory.Node }

func (n hangingSetNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if strings.HasSuffix(key, "hang") {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

// endsObserver records the LockEnds it is told.
type endsObserver struct {
	redlock.NopObserver
	mu   sync.Mutex
	ends []string
}

func (o *endsObserver) LockEnd(_ context.Context, d redlock.LockEnd) {
	o.mu.Lock()
	o.ends = append(o.ends, d.Key+":"+d.How)
	o.mu.Unlock()
}

// A Do whose extension falls due while Close waits for the calls in flight
// (before it stops the extensions) ends as Close ends it, EndClosed: the
// keeper must not take the Client's closing for the end of the lock's
// validity (EndExpired), which is still far.
// It runs in a bubble (testing/synctest): its 20 ms sleep puts the hanging
// TryLock's SETs in flight before Close on any machine (on the real clock, a
// loaded machine's Close could come first, and the test prove nothing).
func TestCloseDrainDoEndsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = hangingSetNode{m}
		}
		obs := &endsObserver{}
		c, err := redlock.New(nodes, redlock.WithObserver(obs), redlock.WithTTL(time.Minute),
			redlock.WithExtendInterval(20*time.Millisecond), redlock.WithNodeTimeout(500*time.Millisecond))
		require.NoError(t, err)
		defer c.Close()
		running := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- c.Do(t.Context(), "k", func(ctx context.Context) error {
				close(running)
				<-ctx.Done()
				return nil
			})
		}()
		<-running
		go c.TryLock(context.Background(), "hang") // its SETs stay in flight for the node timeout
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, c.Close())
		<-done
		obs.mu.Lock()
		defer obs.mu.Unlock()
		require.Equal(t, []string{"k:" + redlock.EndClosed}, obs.ends, "how the Do's lock ended, a minute before its validity did")
	})
}
