package redlock_test

import (
	"context"
	"errors"
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

// failingSubscribe is a memory node whose subscriptions fail while fail is
// set.
type failingSubscribe struct {
	*memory.Node
	fail *atomic.Bool
}

func (n failingSubscribe) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if n.fail.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	}
	return n.Node.Subscribe(ctx, key, notify)
}

// subscribeCalls is an Observer that records, for each subscription a node
// answered, the Lock call named in the context it is given (callKey) and
// whether that context had ended.
type subscribeCalls struct {
	redlock.NopObserver
	mu    sync.Mutex
	calls []subscribeCall
}

type subscribeCall struct {
	call  any
	ended bool
	ok    bool
}

func (o *subscribeCalls) NodeCall(ctx context.Context, e redlock.NodeCall) {
	if e.Operation != redlock.OpSubscribe {
		return
	}
	o.mu.Lock()
	o.calls = append(o.calls, subscribeCall{ctx.Value(callKey{}), ctx.Err() != nil, e.OK})
	o.mu.Unlock()
}

func (o *subscribeCalls) since(n int) []subscribeCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]subscribeCall(nil), o.calls[n:]...)
}

// The subscriptions that a waiter hands to the next waiter of its Client
// (see Client.Lock) are made again, when they failed, and observed under the
// context values of the waiter that holds the turn then, not those of the
// waiter that first made them (whose trace span, say, has ended): here the
// first waiter's subscriptions fail on two nodes of three, it gives up, and
// the second, which takes them over, has them made again a second later.
func TestHandedOverSubscriptionsObservedUnderHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		fail.Store(true)
		mem, _ := memNodes(3)
		nodes := []driver.Node{mem[0], failingSubscribe{mem[1], &fail}, failingSubscribe{mem[2], &fail}}
		for _, m := range mem {
			ok, err := m.SetNX(t.Context(), "k", "other", 10*time.Hour)
			require.NoError(t, err)
			require.True(t, ok)
		}
		obs := &subscribeCalls{}
		c := newClient(t, nodes, redlock.WithObserver(obs), redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)))
		firstCtx, cancelFirst := context.WithCancel(context.WithValue(t.Context(), callKey{}, "first"))
		firstDone := make(chan struct{})
		go func() {
			defer close(firstDone)
			_, err := c.Lock(firstCtx, "k")
			require.ErrorIs(t, err, context.Canceled)
		}()
		synctest.Wait() // the first has the turn, listens on node 0
		secondCtx, cancelSecond := context.WithCancel(context.WithValue(t.Context(), callKey{}, "second"))
		defer cancelSecond()
		secondDone := make(chan struct{})
		go func() {
			defer close(secondDone)
			_, err := c.Lock(secondCtx, "k")
			require.ErrorIs(t, err, context.Canceled)
		}()
		synctest.Wait() // the second waits for the turn
		before := obs.since(0)
		require.Len(t, before, 3)
		for _, s := range before {
			require.Equal(t, "first", s.call)
		}
		cancelFirst()
		<-firstDone
		synctest.Wait() // the second has the turn and the first's subscriptions
		fail.Store(false)
		time.Sleep(2 * time.Second) // made again
		synctest.Wait()
		again := obs.since(len(before))
		require.NotEmpty(t, again, "the failed subscriptions made again, until 2 nodes of 3 listen")
		for _, s := range again {
			require.True(t, s.ok)
			require.Equal(t, "second", s.call, "a subscription made again after the hand-over is observed under the first waiter's context")
			require.False(t, s.ended)
		}
		cancelSecond()
		<-secondDone
	})
}
