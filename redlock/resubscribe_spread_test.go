package redlock_test

import (
	"context"
	"errors"
	"fmt"
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

// downSubscribe is a memory node whose subscriptions fail while down is
// set, each failed one counted at the (bubble's) instant it was asked.
type downSubscribe struct {
	*memory.Node
	down *atomic.Bool
	mu   *sync.Mutex
	at   map[time.Time]int
}

func (n downSubscribe) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if n.down.Load() {
		n.mu.Lock()
		n.at[time.Now()]++
		n.mu.Unlock()
		return nil, errors.New("down")
	}
	return n.Node.Subscribe(ctx, key, notify)
}

// Waiters whose subscriptions failed together (a node down, or restarting,
// when they began to wait) subscribe again there at random times within
// each gap, not all at the same instant: 1,000 waiters on two nodes of
// three that refuse subscriptions asked each of them 1,000 times at one
// instant at 1s, 3s, 7s, 15s, 31s and then every 30s, and as many again,
// each waking its waiter for an attempt, the moment the node came back.
func TestResubscriptionsSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := new(atomic.Bool)
		down.Store(true)
		var mu sync.Mutex
		at := map[time.Time]int{}
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			if i < 2 {
				nodes[i] = downSubscribe{memory.New(), down, &mu, at}
			} else {
				nodes[i] = memory.New()
			}
		}
		const waiters = 1000
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		for i := range waiters {
			_, err := holder.TryLock(t.Context(), fmt.Sprint("k", i))
			require.NoError(t, err)
		}
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)))
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Go(func() { c.Lock(ctx, fmt.Sprint("k", i)) })
		}
		time.Sleep(2 * time.Minute)
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		start, most, total := time.Time{}, 0, 0
		for when, n := range at {
			if start.IsZero() || when.Before(start) {
				start = when
			}
			total += n
		}
		for when, n := range at {
			if when != start { // the first subscriptions, as the waiters began
				most = max(most, n)
			}
		}
		require.Greater(t, total, 4*2*waiters, "the waiters subscribed again")
		require.Less(t, most, 2*waiters/10, "failed subscriptions asked again at one instant")
	})
}
